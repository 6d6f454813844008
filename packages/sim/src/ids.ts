/**
 * Ids owned by the simulator instance: object uids, task ids, anything that must differ between
 * objects yet be the same on every run of the same seed.
 */
import type { Prng } from './prng.ts';

/** What lower layers take to name things. */
export interface IdSource {
  /** A fresh id. `kind` is informative (`'uid'`, `'task'`) and may shape the id. */
  next(kind: string): string;
}

const HEX = '0123456789abcdef';

/**
 * Ids drawn from a dedicated PRNG stream: uids look like Kubernetes' (UUID v4 layout) and other
 * kinds are `kind-N` with a per-instance counter. Never two equal uids in one run: collisions are
 * redrawn.
 *
 * @example
 * ```ts
 * const ids = new SeededIds(deriveStreams(7).ids);
 * ids.next('uid');   // e.g. '3f0c9a12-77b1-4c0e-9d21-5a8e0b7c6d44'
 * ids.next('task');  // 'task-1'
 * ```
 */
export class SeededIds implements IdSource {
  readonly #rng: Prng;
  readonly #issued = new Set<string>();
  readonly #counters = new Map<string, number>();

  constructor(rng: Prng) {
    this.#rng = rng;
  }

  next(kind: string): string {
    if (kind === 'uid') {
      for (;;) {
        const id = this.#uuid();
        if (!this.#issued.has(id)) {
          this.#issued.add(id);
          return id;
        }
      }
    }
    const n = (this.#counters.get(kind) ?? 0) + 1;
    this.#counters.set(kind, n);
    return `${kind}-${n}`;
  }

  #uuid(): string {
    let s = '';
    for (let i = 0; i < 32; i++) {
      let nibble = this.#rng.int(16);
      if (i === 12) nibble = 4; // version 4
      if (i === 16) nibble = 8 | (nibble & 3); // variant 10xx
      s += HEX[nibble];
      if (i === 7 || i === 11 || i === 15 || i === 19) s += '-';
    }
    return s;
  }
}
