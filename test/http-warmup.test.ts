import { describe, expect, it } from 'vitest';
import { warmHttpPath } from '../src/runtime/http-warmup.js';
import { eventually } from './helpers/harness.js';

/** TCP servers and sockets this process holds (libuv's view). */
const tcpHandles = () =>
  process.getActiveResourcesInfo().filter((r) => r === 'TCPServerWrap' || r === 'TCPSocketWrap').length;

describe('warmHttpPath', () => {
  it('sends its requests through a private server and leaves no server or socket behind', async () => {
    const before = tcpHandles();
    const warmed = await warmHttpPath({ requests: 40 });
    expect(warmed.requests).toBe(40);
    expect(warmed.ms).toBeGreaterThanOrEqual(0);
    // Sockets close on the next turns once the agent is destroyed and the server closed.
    await eventually(() => tcpHandles() <= before, 5000, 'warm-up sockets closed');
  });

  it('stops at its time limit instead of holding the start', async () => {
    const warmed = await warmHttpPath({ requests: 1_000_000, timeoutMs: 200 });
    expect(warmed.requests).toBeLessThan(1_000_000);
    expect(warmed.ms).toBeLessThan(5000);
  });
});
