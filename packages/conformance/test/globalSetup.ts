/**
 * Runs once per test run, before any conformance test file: removes namespaces an earlier killed
 * run left behind, checks the machine can run the kernel comparison, and prints the one line
 * saying why not when it cannot. Test files read the result with `inject('conformanceEnv')`.
 */
import type { TestProject } from 'vitest/node';
import { checkEnvironment, checkLegacy, requiredButUnavailable, type EnvironmentCheck } from '../src/environment.ts';
import { removeStaleNetns } from '../src/netns.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    conformanceEnv: EnvironmentCheck;
    /** Whether the lab can also use iptables-legacy (to confirm known disagreements). */
    conformanceLegacy: EnvironmentCheck;
  }
}

export default function setup(project: TestProject): void {
  let env = checkEnvironment();
  if (env.ok) {
    try {
      const stale = removeStaleNetns();
      if (stale.length > 0) console.log(`@netsim/conformance: removed ${stale.length} namespace(s) left by an earlier run: ${stale.join(' ')}`);
    } catch (e) {
      env = { ok: false, reason: `could not remove stale namespaces: ${e instanceof Error ? e.message : String(e)}` };
    }
  }
  // CI runs as root with namespaces: the kernel suite is required there, a skip fails the run.
  const required = requiredButUnavailable(env, process.env);
  if (required !== undefined) throw new Error(required);
  if (!env.ok) console.log(`@netsim/conformance: kernel comparison SKIPPED: ${env.reason}`);
  project.provide('conformanceEnv', env);
  project.provide('conformanceLegacy', env.ok ? checkLegacy() : env);
}
