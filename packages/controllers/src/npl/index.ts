/**
 * The NodePortLocal agent as a netsim controller, in Antrea v2.3.2's faulty release and v2.4.4's
 * fixed one. Both share everything but the two Pod handlers.
 */
import type { Controller, ControllerContext, JsonObject } from '@netsim/sim';
import { OptionsReader } from '../options.ts';
import { NPL_WORKERS, NplController, type NplHandlers } from './controller.ts';
import { NPL_DECLARATION } from './declaration.ts';
import type { NplFlaw } from './flaws.ts';
import { HANDLERS_V2_3_2 } from './handlers_v2_3_2.ts';
import { HANDLERS_V2_4_4 } from './handlers_v2_4_4.ts';
import { DEFAULT_PORT_RANGE } from './types.ts';

/** `faulty`: Antrea v2.3.2's handlers. `fixed`: v2.4.4's. */
export type NplVariant = 'faulty' | 'fixed';

export interface NodePortLocalOptions {
  /** First node port of the range (default 61000). */
  readonly portRangeStart?: number;
  /** Last node port of the range (default 62000). */
  readonly portRangeEnd?: number;
  /** Worker count (default 4, as in Antrea). */
  readonly workers?: number;
}

const HANDLERS: Readonly<Record<NplVariant, NplHandlers>> = { faulty: HANDLERS_V2_3_2, fixed: HANDLERS_V2_4_4 };

/**
 * The NodePortLocal agent (controller name `antrea-agent`).
 *
 * @example
 * ```ts
 * const world = new World({ seed: 1, cluster, controller: nodePortLocal('faulty'), invariants: [noStaleDnat({ chains: [NPL_CHAIN] })] });
 * ```
 */
export function nodePortLocal(variant: NplVariant, options: JsonObject = {}): Controller<ControllerContext> {
  return buildNodePortLocal(variant, options, undefined, `npl:${variant}`);
}

/**
 * The agent with one flaw switched on (the mutation suite's builder; not part of the package's
 * exports). `label` names the controller in option errors.
 */
export function buildNodePortLocal(variant: NplVariant, options: JsonObject, flaw: NplFlaw | undefined, label: string): Controller<ControllerContext> {
  const r = new OptionsReader(label, options);
  const start = r.int('portRangeStart', DEFAULT_PORT_RANGE.start, 1, 65535);
  const end = r.int('portRangeEnd', DEFAULT_PORT_RANGE.end, start, 65535);
  const workers = r.int('workers', NPL_WORKERS, 1, 64);
  r.done();
  const handlers = HANDLERS[variant];
  return {
    name: 'antrea-agent',
    declares: NPL_DECLARATION,
    create: (ctx) => {
      const c = new NplController(ctx, handlers, { portRange: { start, end }, workers, ...(flaw !== undefined ? { flaw } : {}) });
      return { start: () => c.run(), stop: () => c.stop() };
    },
  };
}
