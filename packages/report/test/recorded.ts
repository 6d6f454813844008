/** Traces of bundled scenarios, recorded by replaying them (each once per test file). */
import { fileURLToPath } from 'node:url';
import { CONTROLLERS } from '@netsim/controllers';
import { loadScenarioFile, replay } from '@netsim/scenario';
import { parseJsonLines, toJsonLines, type TraceEvent } from '@netsim/sim';

const cache = new Map<string, Promise<string>>();

/** The JSON-lines trace of `scenarios/<name>.yaml` at its own seed. */
export function recordedTrace(name: string): Promise<string> {
  let p = cache.get(name);
  if (p === undefined) {
    p = (async () => {
      const path = fileURLToPath(new URL(`../../../scenarios/${name}.yaml`, import.meta.url));
      const file = await loadScenarioFile(path);
      const r = await replay(file, { controllers: CONTROLLERS, trace: true });
      return toJsonLines(r.events);
    })();
    cache.set(name, p);
  }
  return p;
}

export async function recordedEvents(name: string): Promise<TraceEvent[]> {
  return parseJsonLines(await recordedTrace(name));
}
