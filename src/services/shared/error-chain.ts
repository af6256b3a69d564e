/** Reading an error and the errors under it, for the layers that word a failure for people. */

/** The error and everything under it (`cause` chains, AggregateError members), outermost first. */
export function errorChain(err: unknown): unknown[] {
  const out: unknown[] = [];
  const walk = (e: unknown, depth: number): void => {
    if (e === undefined || e === null || depth > 8 || out.includes(e)) return;
    out.push(e);
    if (e instanceof AggregateError) for (const inner of e.errors) walk(inner, depth + 1);
    if (e instanceof Error) walk(e.cause, depth + 1);
  };
  walk(err, 0);
  return out;
}

export function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
