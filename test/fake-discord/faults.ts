import type { FaultHandle, FaultSpec } from './types.js';

interface FaultState {
  id: number;
  spec: FaultSpec;
  hits: number;
  remaining: number;
}

/** Injected faults (`injectFault`): the next matching requests are answered with the given status/body. */
export class FaultBook {
  readonly #faults: FaultState[] = [];
  #nextId = 1;

  inject(spec: FaultSpec): FaultHandle {
    const state: FaultState = { id: this.#nextId++, spec, hits: 0, remaining: spec.count ?? 1 };
    this.#faults.push(state);
    return {
      id: state.id,
      spec,
      get hits() {
        return state.hits;
      },
      get remaining() {
        return state.remaining;
      },
      remove: () => {
        const i = this.#faults.indexOf(state);
        if (i >= 0) this.#faults.splice(i, 1);
      },
    };
  }

  clear(): void {
    this.#faults.length = 0;
  }

  /** The first fault matching this request, counted as used; undefined if none. */
  take(method: string, path: string, template: string | null): { spec: FaultSpec } | undefined {
    for (const f of this.#faults) {
      if (f.remaining <= 0) continue;
      if (f.spec.method && f.spec.method.toUpperCase() !== method) continue;
      const r = f.spec.route;
      if (r !== undefined) {
        if (typeof r === 'string') {
          if (r !== path && r !== template) continue;
        } else if (!r.test(path) && !(template !== null && r.test(template))) continue;
      }
      f.remaining -= 1;
      f.hits += 1;
      return f;
    }
    return undefined;
  }
}
