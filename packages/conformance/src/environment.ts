/**
 * Can this machine run the kernel comparison? It needs Linux, root, `ip netns`, the iptables
 * tools, `conntrack`, `ipset` (the real-world dumps name sets) and Python 3 (for the packet pump), and must be allowed to create a network
 * namespace and load a table into it. (`nsenter` and `sysctl` are not needed.) {@link checkEnvironment} tries exactly that and, when
 * something is missing, says what in one line. `NETSIM_CONFORMANCE=off` skips it on purpose.
 */
import { pythonPath, run, runIn, which } from './exec.ts';
import { createNetns, nextPrefix, releaseNetns } from './netns.ts';

export type EnvironmentCheck = { readonly ok: true } | { readonly ok: false; readonly reason: string };

const TOOLS = ['ip', 'iptables-restore', 'iptables-save', 'conntrack', 'ipset'] as const;

function firstLine(e: unknown): string {
  return (e instanceof Error ? e.message : String(e)).split('\n')[0] ?? '';
}

/**
 * Checks every prerequisite, cheapest first, and stops at the first one missing.
 *
 * @example
 * const env = checkEnvironment();
 * if (!env.ok) console.log(`conformance skipped: ${env.reason}`);
 */
export function checkEnvironment(): EnvironmentCheck {
  if (process.env['NETSIM_CONFORMANCE'] === 'off') return { ok: false, reason: 'NETSIM_CONFORMANCE=off' };
  if (process.platform !== 'linux') return { ok: false, reason: `not Linux (platform ${process.platform})` };
  const uid = process.getuid?.() ?? -1;
  if (uid !== 0) return { ok: false, reason: `not running as root (uid ${uid})` };
  const missing: string[] = TOOLS.filter((t) => which(t) === undefined);
  if (pythonPath() === undefined) missing.push('python3');
  if (missing.length > 0) return { ok: false, reason: `missing ${missing.join(', ')} (Debian: apt-get install iptables conntrack ipset iproute2 python3)` };
  try {
    run('ip', ['netns', 'list']);
  } catch (e) {
    return { ok: false, reason: `ip netns unavailable: ${firstLine(e)}` };
  }
  const probe = `${nextPrefix()}-probe`;
  try {
    createNetns(probe);
  } catch (e) {
    return { ok: false, reason: `cannot create a network namespace: ${firstLine(e)}` };
  }
  try {
    runIn(probe, 'iptables-restore', [], { input: '*filter\n:INPUT ACCEPT [0:0]\nCOMMIT\n' });
    runIn(probe, 'conntrack', ['-L']);
  } catch (e) {
    return { ok: false, reason: `iptables-restore or conntrack fails in a network namespace: ${firstLine(e)}` };
  } finally {
    releaseNetns(probe);
  }
  return { ok: true };
}

/**
 * Can the lab also use iptables-legacy (x_tables)? Needs the legacy tools and a kernel with the
 * legacy iptables modules; used only to tell iptables-nft translation details from kernel
 * behaviour.
 */
export function checkLegacy(): EnvironmentCheck {
  const base = checkEnvironment();
  if (!base.ok) return base;
  const missing = ['iptables-legacy-restore', 'iptables-legacy-save'].filter((t) => which(t) === undefined);
  if (missing.length > 0) return { ok: false, reason: `missing ${missing.join(', ')}` };
  const probe = `${nextPrefix()}-probe`;
  createNetns(probe);
  try {
    runIn(probe, 'iptables-legacy-restore', [], { input: '*filter\n:INPUT ACCEPT [0:0]\nCOMMIT\n' });
  } catch (e) {
    return { ok: false, reason: `iptables-legacy-restore fails in a network namespace: ${firstLine(e)}` };
  } finally {
    releaseNetns(probe);
  }
  return { ok: true };
}

/**
 * In CI (`CI=true`) the kernel comparison is required: a machine that cannot run it is an error
 * there (the message says why), not a skip. `NETSIM_CONFORMANCE=off` still opts out on purpose.
 */
export function requiredButUnavailable(env: EnvironmentCheck, vars: { readonly [k: string]: string | undefined }): string | undefined {
  if (env.ok || vars['CI'] !== 'true' || vars['NETSIM_CONFORMANCE'] === 'off') return undefined;
  return `@netsim/conformance: the kernel comparison is required in CI (CI=true) but cannot run: ${env.reason}`;
}
