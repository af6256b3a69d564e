import type { APIInteraction, APIInteractionResponse } from 'discord-api-types/v10';
import type { Logger } from 'pino';
import { translatorFor } from '../../../i18n/index.js';
import { STORE_DOWN_TEXT } from '../../store/errors.js';
import { apologyFor } from './http-endpoint.js';
import { INTERACTION_CLAIM_TIMEOUT_MS, withTimeout, type InteractionClaim } from './interaction-claim.js';

export interface GatewayIntakeDeps {
  logger: Logger;
  claim: InteractionClaim;
  /** Gateway lease (several instances): this instance still holds the gateway. */
  holdsGateway?: () => Promise<boolean>;
  run(raw: APIInteraction, receivedAt: number): void;
  /** Sends a first answer through the callback endpoint (the apology when the store cannot claim). */
  answer(raw: APIInteraction, body: APIInteractionResponse): Promise<void>;
  claimTimeoutMs?: number;
}

/**
 * An INTERACTION_CREATE from the gateway: fenced by the lease, claimed, then run. Without
 * a claim nothing runs (the member is told the bot is unavailable for now): a run that
 * could not claim might be the second one.
 */
export function gatewayIntake(deps: GatewayIntakeDeps): (raw: APIInteraction) => void {
  const accept = async (raw: APIInteraction): Promise<void> => {
    const receivedAt = Date.now();
    const log = deps.logger.child({ interactionId: raw.id, kind: raw.type });
    // Fencing: an instance that lost the gateway lease never acts on what its dying connection delivers.
    if (deps.holdsGateway && !(await deps.holdsGateway())) {
      log.warn('interaction ignored: this instance no longer holds the gateway');
      return;
    }
    let first: boolean;
    try {
      first = await withTimeout(deps.claim(raw.id), deps.claimTimeoutMs ?? INTERACTION_CLAIM_TIMEOUT_MS);
    } catch (err) {
      log.warn({ err }, 'store unavailable; interaction answered with an apology');
      await deps
        .answer(raw, apologyFor(raw.type, translatorFor(raw).t(STORE_DOWN_TEXT)))
        .catch((e: unknown) => log.warn({ err: e }, 'could not answer the interaction'));
      return;
    }
    if (!first) {
      log.info('duplicate interaction delivery; not run again');
      return;
    }
    deps.run(raw, receivedAt);
  };
  return (raw) => {
    void accept(raw).catch((err: unknown) => deps.logger.error({ err }, 'interaction intake failed'));
  };
}
