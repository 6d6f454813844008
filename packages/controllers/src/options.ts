/**
 * Reading a controller's options (the scenario's `controller.options`, plain JSON) with clear
 * errors: every field is checked, unknown fields are refused.
 */
import type { JsonObject, JsonValue } from '@netsim/sim';
import { ControllerOptionsError } from './errors.ts';

/** A reader over one controller's options that names the controller in its errors. */
export class OptionsReader {
  readonly #controller: string;
  readonly #options: JsonObject;
  readonly #known = new Set<string>();

  constructor(controller: string, options: JsonObject) {
    this.#controller = controller;
    this.#options = options;
  }

  #get(field: string): JsonValue | undefined {
    this.#known.add(field);
    return this.#options[field];
  }

  /** An integer in [min, max], or the default when absent. */
  int(field: string, def: number, min: number, max: number): number {
    const v = this.#get(field);
    if (v === undefined) return def;
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min || v > max) {
      throw new ControllerOptionsError(this.#controller, field, `must be an integer from ${min} to ${max}, got ${JSON.stringify(v)}`);
    }
    return v;
  }

  /** One of `choices`, or the default when absent. */
  oneOf<T extends string>(field: string, def: T, choices: readonly T[]): T {
    const v = this.#get(field);
    if (v === undefined) return def;
    if (typeof v !== 'string' || !(choices as readonly string[]).includes(v)) {
      throw new ControllerOptionsError(this.#controller, field, `must be one of ${choices.map((c) => JSON.stringify(c)).join(', ')}, got ${JSON.stringify(v)}`);
    }
    return v as T;
  }

  /** An IPv4 CIDR `a.b.c.d/n`, or the default when absent. */
  cidr(field: string, def: string): string {
    const v = this.#get(field);
    if (v === undefined) return def;
    if (typeof v !== 'string' || !/^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/.test(v) || v.split(/[./]/).some((x, i) => Number(x) > (i === 4 ? 32 : 255))) {
      throw new ControllerOptionsError(this.#controller, field, `must be an IPv4 CIDR like "198.18.0.0/15", got ${JSON.stringify(v)}`);
    }
    return v;
  }

  /** Refuse fields nobody asked for (a typo must not be silently ignored). */
  done(): void {
    for (const k of Object.keys(this.#options).sort()) {
      if (!this.#known.has(k)) throw new ControllerOptionsError(this.#controller, k, `is not an option of this controller (options: ${[...this.#known].sort().join(', ') || 'none'})`);
    }
  }
}
