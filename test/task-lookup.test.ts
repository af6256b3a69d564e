/**
 * The song_id autocomplete's reads of typed task ids: only ids that look like task ids,
 * a few a moment per member, answers (and "no such task") cached, outages not.
 */
import { describe, expect, it } from 'vitest';
import { MediaRequestRejectedError, MediaUnavailableError } from '../src/services/media/errors.js';
import { TaskLookup } from '../src/services/media/task-lookup.js';
import type { Operation, TaskResult } from '../src/services/media/types.js';

function counting(answer: (taskId: string) => TaskResult | Error) {
  const reads: string[] = [];
  return {
    reads,
    reader: {
      read: async (_op: Operation, taskId: string): Promise<TaskResult> => {
        reads.push(taskId);
        const a = answer(taskId);
        if (a instanceof Error) throw a;
        return a;
      },
    },
  };
}
const song = (taskId: string): TaskResult => ({
  operation: 'song',
  taskId,
  state: 'finished',
  outputs: { kind: 'song', songs: [{ songId: 's1' }] },
  raw: {},
});

describe('TaskLookup', () => {
  it('reads only what looks like a task id, once: answers are cached', async () => {
    const { reads, reader } = counting(song);
    const lookup = new TaskLookup({ reader });
    expect(await lookup.lookup('u1', 'song', 'ab')).toBeUndefined();
    expect(await lookup.lookup('u1', 'song', 'not a task id!')).toBeUndefined();
    expect((await lookup.lookup('u1', 'song', 'task-0001'))?.taskId).toBe('task-0001');
    expect((await lookup.lookup('u2', 'song', ' task-0001 '))?.taskId).toBe('task-0001');
    expect(reads).toEqual(['task-0001']);
  });

  it('"no such task" is remembered; an outage is not', async () => {
    let down = true;
    const { reads, reader } = counting((id) =>
      id === 'missing-1'
        ? new MediaRequestRejectedError(['Task not found'], 404)
        : down
          ? new MediaUnavailableError('down')
          : song(id),
    );
    const lookup = new TaskLookup({ reader });
    expect(await lookup.lookup('u1', 'song', 'missing-1')).toBeUndefined();
    expect(await lookup.lookup('u1', 'song', 'missing-1')).toBeUndefined();
    expect(await lookup.lookup('u1', 'song', 'task-0002')).toBeUndefined();
    down = false;
    expect((await lookup.lookup('u1', 'song', 'task-0002'))?.taskId).toBe('task-0002');
    expect(reads).toEqual(['missing-1', 'task-0002', 'task-0002']);
  });

  it('a member typing fast is throttled (5 per 10 s); other members are not', async () => {
    const { reads, reader } = counting(song);
    const lookup = new TaskLookup({ reader });
    for (let k = 0; k < 12; k++) await lookup.lookup('typist', 'song', `task-${1000 + k}`);
    expect(reads).toHaveLength(5);
    expect((await lookup.lookup('someone-else', 'song', 'task-9999'))?.taskId).toBe('task-9999');
    expect(reads).toHaveLength(6);
  });
});
