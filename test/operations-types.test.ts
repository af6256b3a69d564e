/**
 * Compile-time completeness of the operation registry. Each `@ts-expect-error`
 * below is checked by `npm run typecheck` (tsc over test/): if the line stopped
 * being an error (a piece became optional, the registry stopped covering every
 * operation), typecheck fails.
 */
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { Operation, TaskOutputs } from '../src/services/media/types.js';
import { operations } from '../src/services/operations/index.js';
import type {
  OperationModule,
  OperationRegistry,
  OutputsOf,
  ParamsByOperation,
} from '../src/services/operations/types.js';

describe('an incomplete operation does not compile', () => {
  it('a registry without one operation’s module', () => {
    const { upload: _upload, ...withoutUpload } = operations;
    // @ts-expect-error upload has no module
    const registry: OperationRegistry = withoutUpload;
    expect(Object.keys(registry)).not.toContain('upload');
  });

  it('a module missing a piece (card, outputs, body, next steps)', () => {
    const { card: _card, ...noCard } = operations.song;
    // @ts-expect-error card is missing
    const a: OperationModule<'song'> = noCard;
    const { outputs: _outputs, ...noOutputs } = operations.video;
    // @ts-expect-error outputs is missing
    const b: OperationModule<'video'> = noOutputs;
    const { body: _body, ...noBody } = operations.upscale;
    // @ts-expect-error body is missing
    const c: OperationModule<'upscale'> = noBody;
    const { continueFrom: _continueFrom, ...noNext } = operations.upload;
    // @ts-expect-error continueFrom must be said, even when nothing leads there (undefined)
    const d: OperationModule<'upload'> = noNext;
    expect([a, b, c, d]).toHaveLength(4);
  });

  it('a module answering with another operation’s result or parameters', () => {
    // @ts-expect-error a song module cannot parse video outputs
    const a: OperationModule<'song'> = { ...operations.song, outputs: operations.video.outputs };
    // @ts-expect-error a video module cannot rebuild song parameters
    const b: OperationModule<'video'> = { ...operations.video, fromStored: operations.song.fromStored };
    expect([a, b]).toHaveLength(2);
  });

  it('a new operation needs its parameters and its result kind before any module can exist', () => {
    type Remix = Operation | 'remix';
    // @ts-expect-error no parameters declared for 'remix'
    type RemixParams = ParamsByOperation['remix'];
    expectTypeOf<RemixParams>().toBeAny();
    // Without a `TaskOutputs` member of kind 'remix' its outputs are `never`: no module can parse them.
    expectTypeOf<Extract<TaskOutputs, { kind: 'remix' }>>().toBeNever();
    expectTypeOf<Exclude<Remix, Operation>>().toEqualTypeOf<'remix'>();
  });

  it('every operation has a result kind and parameters', () => {
    expectTypeOf<OutputsOf<Operation>['kind']>().toEqualTypeOf<Operation>();
    expectTypeOf<keyof ParamsByOperation>().toEqualTypeOf<Operation>();
    expectTypeOf(operations).toExtend<OperationRegistry>();
  });
});
