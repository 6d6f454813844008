/**
 * Where the `replay` and `fuzz` commands find controllers and fuzz profiles: the reference
 * controllers of `@netsim/controllers`, plus any a user module adds (`--controllers ./mine.ts`,
 * a module exporting `controllers`, a registry by name, and optionally `fuzzProfiles` and
 * `invariants`, users' invariants by name).
 */
import { existsSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { CONTROLLERS, type FuzzProfile } from '@netsim/controllers';
import type { ControllerRegistry, InvariantSource } from '@netsim/sim';
import type { InvariantRegistry } from '@netsim/scenario';
import { userPath } from '../cwd.ts';
import { UsageError, messageOf } from '../errors.ts';

export interface Plugins {
  readonly controllers: ControllerRegistry;
  readonly fuzzProfiles: { readonly [prefix: string]: FuzzProfile };
  /** Users' invariants by name (the module's `invariants` export): `kind: custom` in scenario files, and checked by `netsim fuzz`. */
  readonly invariants: InvariantRegistry;
}

function isRecord(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null;
}

/**
 * The built-in registry, merged with the `controllers` and `fuzzProfiles` of a user module.
 * A module that is missing, throws while loading or exports the wrong shape is a
 * {@link UsageError} naming the module.
 */
export async function loadPlugins(module: string | undefined, builtinProfiles: { readonly [prefix: string]: FuzzProfile }): Promise<Plugins> {
  const controllers: Record<string, ControllerRegistry[string]> = { ...CONTROLLERS };
  const fuzzProfiles: Record<string, FuzzProfile> = { ...builtinProfiles };
  const invariants: Record<string, InvariantSource> = {};
  if (module !== undefined) {
    const path = userPath(module);
    if (!existsSync(path)) throw new UsageError(`--controllers ${module}: no such file (${path})`);
    let mod: unknown;
    try {
      mod = await import(pathToFileURL(path).href);
    } catch (e) {
      const code = isRecord(e) ? e['code'] : undefined;
      if (code === 'ERR_UNKNOWN_FILE_EXTENSION') throw new UsageError(`--controllers ${module}: this Node cannot load ${module.slice(module.lastIndexOf('.'))} files; compile the module to JavaScript, or run netsim under a TypeScript loader (node --import tsx)`);
      throw new UsageError(`--controllers ${module}: the module failed to load: ${messageOf(e)}`);
    }
    if (!isRecord(mod) || !isRecord(mod['controllers'])) throw new UsageError(`--controllers ${module}: the module exports no "controllers" registry (an object of controller factories by name)`);
    for (const [name, factory] of Object.entries(mod['controllers'])) {
      if (typeof factory !== 'function') throw new UsageError(`--controllers ${module}: controllers["${name}"] is ${factory === null ? 'null' : typeof factory}, not a factory function (options) => Controller`);
    }
    Object.assign(controllers, mod['controllers']);
    if (mod['fuzzProfiles'] !== undefined && !isRecord(mod['fuzzProfiles'])) throw new UsageError(`--controllers ${module}: "fuzzProfiles" must be an object of fuzz profiles by controller prefix`);
    if (isRecord(mod['fuzzProfiles'])) Object.assign(fuzzProfiles, mod['fuzzProfiles']);
    if (mod['invariants'] !== undefined) {
      if (!isRecord(mod['invariants'])) throw new UsageError(`--controllers ${module}: "invariants" must be an object of invariants (or factories of them) by name`);
      for (const [name, inv] of Object.entries(mod['invariants'])) {
        if (typeof inv !== 'function' && !(isRecord(inv) && typeof inv['check'] === 'function')) throw new UsageError(`--controllers ${module}: invariants["${name}"] is neither an invariant ({ name, check }) nor a factory (() => invariant, or (options) => invariant)`);
      }
      Object.assign(invariants, mod['invariants']);
    }
  }
  return { controllers, fuzzProfiles, invariants };
}
