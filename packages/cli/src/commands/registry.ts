/**
 * Where the `replay` and `fuzz` commands find controllers and fuzz profiles: the reference
 * controllers of `@netsim/controllers`, plus any a user module adds (`--controllers ./mine.ts`,
 * a module exporting `controllers`, a registry by name, and optionally `fuzzProfiles`).
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { CONTROLLERS } from '@netsim/controllers';
import type { ControllerRegistry } from '@netsim/sim';
import type { FuzzProfile } from '@netsim/scenario';

export interface Plugins {
  readonly controllers: ControllerRegistry;
  readonly fuzzProfiles: { readonly [prefix: string]: FuzzProfile };
}

function isRecord(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null;
}

/** The built-in registry, merged with the `controllers` and `fuzzProfiles` of a user module. */
export async function loadPlugins(module: string | undefined, builtinProfiles: { readonly [prefix: string]: FuzzProfile }): Promise<Plugins> {
  const controllers: Record<string, ControllerRegistry[string]> = { ...CONTROLLERS };
  const fuzzProfiles: Record<string, FuzzProfile> = { ...builtinProfiles };
  if (module !== undefined) {
    const mod: unknown = await import(pathToFileURL(resolve(module)).href);
    if (!isRecord(mod) || !isRecord(mod['controllers'])) throw new Error(`--controllers ${module}: the module exports no "controllers" registry (an object of controller factories by name)`);
    Object.assign(controllers, mod['controllers']);
    if (isRecord(mod['fuzzProfiles'])) Object.assign(fuzzProfiles, mod['fuzzProfiles']);
  }
  return { controllers, fuzzProfiles };
}
