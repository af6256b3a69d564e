/** A pino logger whose lines land in an array, parsed (tests read what was logged). */
import { pino } from 'pino';

export interface Line {
  msg: string;
  step?: string;
  limitMs?: number;
}

export function capture() {
  const lines: Line[] = [];
  const logger = pino({ level: 'debug' }, { write: (s: string) => void lines.push(JSON.parse(s) as Line) });
  return { logger, lines };
}
