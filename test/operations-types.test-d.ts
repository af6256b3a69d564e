/**
 * Compile-time completeness of the operation registry, checked by the compiler, not at run
 * time: `npm test` runs these through vitest's typecheck (tsc), and `npm run typecheck` too.
 * A failing expectation, or an `@ts-expect-error` line that stopped being an error, fails both.
 */
import { describe, expectTypeOf, it } from 'vitest';
import type { MessageKey } from '../src/i18n/index.js';
import type { Operation, OperationTypes, TaskOutputs } from '../src/services/media/types.js';
import type { operations } from '../src/services/operations/index.js';
import type {
  OperationModule,
  OperationRegistry,
  OutputsOf,
  ParamsByOperation,
} from '../src/services/operations/types.js';

type Registry = typeof operations;

describe('an incomplete operation does not compile', () => {
  it('a registry without one operation’s module', () => {
    expectTypeOf<Omit<Registry, 'upload'>>().not.toExtend<OperationRegistry>();
  });

  it('a module missing a piece (card, outputs, body, next steps)', () => {
    expectTypeOf<Omit<Registry['song'], 'card'>>().not.toExtend<OperationModule<'song'>>();
    expectTypeOf<Omit<Registry['video'], 'outputs'>>().not.toExtend<OperationModule<'video'>>();
    expectTypeOf<Omit<Registry['upscale'], 'body'>>().not.toExtend<OperationModule<'upscale'>>();
    // continueFrom must be said, even when nothing leads there (undefined).
    expectTypeOf<Omit<Registry['upload'], 'continueFrom'>>().not.toExtend<OperationModule<'upload'>>();
    // The stored result's schema (the store checks jobs with it) and the gallery's file kinds.
    expectTypeOf<Omit<Registry['video'], 'resultSchema'>>().not.toExtend<OperationModule<'video'>>();
    expectTypeOf<Omit<Registry['song'], 'fileKinds'>>().not.toExtend<OperationModule<'song'>>();
    // What of its result is free text (left out when AutoMod refused the message).
    expectTypeOf<Omit<Registry['upload'], 'resultWithoutText'>>().not.toExtend<OperationModule<'upload'>>();
  });

  it('a module answering with another operation’s result or parameters', () => {
    type SongWithVideoOutputs = Omit<Registry['song'], 'outputs'> & Pick<Registry['video'], 'outputs'>;
    expectTypeOf<SongWithVideoOutputs>().not.toExtend<OperationModule<'song'>>();
    type VideoWithSongParams = Omit<Registry['video'], 'fromStored'> & Pick<Registry['song'], 'fromStored'>;
    expectTypeOf<VideoWithSongParams>().not.toExtend<OperationModule<'video'>>();
  });

  it('a new operation is none until its module declares its types (OperationTypes)', () => {
    // @ts-expect-error 'remix' is no operation: no module augments OperationTypes with it
    type RemixModule = OperationModule<'remix'>;
    expectTypeOf<RemixModule['operation']>().toEqualTypeOf<'remix'>();
    // @ts-expect-error no parameters declared for 'remix'
    type RemixParams = ParamsByOperation['remix'];
    expectTypeOf<RemixParams>().toBeAny();
    // Without a `TaskOutputs` member of kind 'remix' its outputs are `never`: no module can parse them.
    expectTypeOf<Extract<TaskOutputs, { kind: 'remix' }>>().toBeNever();
  });

  it('every operation has a module, a result kind and parameters', () => {
    expectTypeOf<keyof Registry>().toEqualTypeOf<Operation>();
    expectTypeOf<keyof OperationTypes>().toEqualTypeOf<Operation>();
    // Each result's kind is its operation's name.
    expectTypeOf<OutputsOf<'song'>['kind']>().toEqualTypeOf<'song'>();
    expectTypeOf<OutputsOf<Operation>['kind']>().toEqualTypeOf<Operation>();
    expectTypeOf<keyof ParamsByOperation>().toEqualTypeOf<Operation>();
    expectTypeOf<Registry>().toExtend<OperationRegistry>();
    // The checks above can fail: the complete modules do pass.
    expectTypeOf<Registry['song']>().toExtend<OperationModule<'song'>>();
    expectTypeOf<Registry['video']>().toExtend<OperationModule<'video'>>();
  });

  it('every operation has its title and label in the catalogs (its command texts: test/i18n.test.ts)', () => {
    expectTypeOf<`operations.${Operation}.title` | `operations.${Operation}.label`>().toExtend<MessageKey>();
    // The check can fail: an operation the catalogs do not know has no such key.
    expectTypeOf<'operations.remix.title'>().not.toExtend<MessageKey>();
  });
});
