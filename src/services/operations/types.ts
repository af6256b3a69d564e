/**
 * What one media operation is, declared once: its slash command (options and
 * their autocomplete), what it costs by default (CREDIT_COSTS), its service
 * endpoint (the MEDIA_PATH_* variable and default path), its parameters (one
 * zod schema), how they are kept on the job and read back (Retry, next steps),
 * the service request body, the result it expects, how that result renders,
 * which files the gallery keeps, and the next steps offered under it. The
 * command list, the configuration's costs and paths, and the media client's
 * endpoints are read from the registry (./index.ts), which is typed
 * `{ [K in Operation]: OperationModule<K> }`: an operation without a module, or
 * a module missing a piece, does not compile.
 */
import type { RESTPostAPIChatInputApplicationCommandsJSONBody } from 'discord-api-types/v10';
import type { OptionResolver } from '../discord/interactions/options.js';
import type { z } from 'zod';
import type { Translator } from '../../i18n/index.js';
import type { ResultParts } from '../discord/render/card.js';
import type { TaskResultBody } from '../media/schemas.js';
import type { BodyOptions, Operation, OutputsOf, ParamsOf, RequestBody } from '../media/types.js';
import type { JobRecord } from '../store/types.js';
import type { MemberText } from './input.js';

// The parameters, results, request body and body options are the media layer's (it sends them):
// each module declares its own in `OperationTypes` there (by augmentation).
export type { BodyOptions, OutputsOf, ParamsByOperation, ParamsOf, RequestBody } from '../media/types.js';

/** Parameters as stored on the job: shown to the member, inherited by next steps (no secrets, no bytes). */
export type StoredParams = JobRecord['params'];

/** What the slash options of an operation may check against. */
export interface InputLimits {
  /** Largest input image accepted (bytes). */
  maxImageBytes: number;
}

/** Where the choices of an autocompleted option come from (src/commands/autocomplete.ts). */
export type ChoiceSource =
  /** The member's finished tasks of an operation (or a task id typed that the service knows as one). */
  | { from: 'tasks'; of: Operation }
  /** The songs of the song task named by another option. */
  | { from: 'songs'; taskOption: string };

/**
 * How a member starts it: a slash command whose options map to the parameters
 * (src/commands/ registers it from here), or a session gathered over several
 * interactions (training photos: its own command in src/commands/).
 */
export type OperationInput<P> =
  | {
      kind: 'slash';
      /** Named `command`; the descriptions come from the catalogs (`commands.<command>.*`). */
      data: RESTPostAPIChatInputApplicationCommandsJSONBody;
      /** Options → parameters; throws UserError with what to fix. Validated against `schema` after. */
      fromOptions(options: OptionResolver, limits: InputLimits): P;
      /** The choices of each option declared with `setAutocomplete(true)`, by option name. */
      autocomplete?: Readonly<Record<string, ChoiceSource>>;
    }
  | { kind: 'session' };

/** The service endpoint of an operation: the variable that sets it and its default. */
export interface ServicePath {
  /** Its environment variable (.env.example and docs/configuration.md list it). */
  readonly variable: `MEDIA_PATH_${string}`;
  /** The path unless the variable is set. */
  readonly default: `/${string}`;
}

/** What a next-step button gives the job it starts, besides the parent. */
export interface StepInput {
  /** Extend song N: which song of the parent (0-based). */
  songIndex?: number;
  /** Extend video: the prompt typed in the modal. */
  prompt?: string;
}

/** The module of operation `K`: its types are its entry in `OperationTypes` (src/services/media/types.ts). */
export type OperationModule<K extends Operation> = OperationModuleOf<K, ParamsOf<K>, OutputsOf<K>>;

/**
 * An operation module by its name, parameters (P) and finished result (O): what
 * `OperationModule<K>` is for the bot's own operations, spelled out so that a test can
 * check a module of its own against it without adding its name to `OperationTypes`.
 */
export interface OperationModuleOf<K extends string, P, O> {
  readonly operation: K;
  /**
   * The slash command (its name in CREDIT_COSTS; also names threads). Its title and
   * label are the catalogs' `operations.<operation>.title` and `.label`.
   */
  readonly command: string;
  /** Credits it costs unless CREDIT_COSTS says otherwise (a whole number, 0-1000000). */
  readonly cost: number;
  readonly input: OperationInput<P>;
  /** Checked before the (paid) service call; messages name the option to fix. */
  readonly schema: z.ZodType<Parsed<P>, unknown>;
  /** Service endpoint (MEDIA_PATH_*). */
  readonly path: ServicePath;
  /** `sync`: the response is the finished result (upscale); `async`: a task id, then webhooks/polls. */
  readonly mode: 'sync' | 'async';
  /** Parameters → what the job keeps. */
  toStored(params: P): StoredParams;
  /** Whether a failed job offers Retry (training photos are not kept, so they are gathered again). */
  readonly retryable: boolean;
  /**
   * The parameters again from a stored job, for Retry (same parameters, a new job),
   * or a sentence saying why they cannot be (training photos are not kept).
   */
  fromStored(stored: StoredParams): P | { cannot: MemberText };
  /** Parameters → the service request body. */
  body(params: P, opts: BodyOptions): RequestBody;
  /** The outputs of a finished result body, or undefined when the body does not carry them. */
  outputs(body: TaskResultBody): O | undefined;
  /**
   * The finished result as the job record keeps it, checked whenever a job is read back
   * (the store is given it: createStores' `operations`). Its output is `O` exactly when `O`
   * is declared as `z.output<typeof …>` of it.
   */
  readonly resultSchema: z.ZodType<O>;
  /** What the finished result adds to the job's card, in the card's language (tr). */
  card(job: JobRecord, out: O, tr: Translator): ResultParts;
  /**
   * The result without any free text (lyrics, the service's message): what a public message
   * still shows when AutoMod refused it even without the member's text.
   */
  resultWithoutText(out: O): O;
  /** Whether a finished job is also posted to the server's gallery channel. */
  readonly inGallery: boolean;
  /** Result files the gallery re-hosts, in the order shown. */
  files(out: O): string[];
  /** What those files are; a file whose bytes are anything else is linked, never re-hosted. */
  readonly fileKinds: readonly FileKind[];
  /**
   * A job of this operation continuing `parent` from one of the parent's next-step
   * buttons: the parameters it inherits (every one that still applies). Undefined
   * when no next step leads here.
   */
  continueFrom:
    ((parent: JobRecord & { taskId: string }, input: StepInput) => P | { cannot: MemberText }) | undefined;
}

/** A kind of result file the gallery re-hosts (its bytes are sniffed: src/services/community/media-sniff.ts). */
export type FileKind = 'image' | 'audio' | 'video';

type OptionalKeys<T> = { [P in keyof T]-?: object extends Pick<T, P> ? P : never }[keyof T];
/** What zod outputs for T: its optional properties may also hold `undefined`. */
export type Parsed<T> = Omit<T, OptionalKeys<T>> & { [P in OptionalKeys<T>]?: T[P] | undefined };

/** Every operation has its module. */
export type OperationRegistry = { readonly [K in Operation]: OperationModule<K> };

/** The module of some operation (what lists of modules hold). */
export type SomeOperationModule = OperationRegistry[Operation];
