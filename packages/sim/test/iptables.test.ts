import { describe, expect, it } from 'vitest';
import { freshRuleset, type Ruleset } from '@netsim/netfilter';
import { Engine, createIptablesHandle, isIptablesError, netfilterBackend, noIptablesFaults, type IptablesFaultState, type IptablesHandle, type IptablesHandleOptions, type RunOutcome, type TraceEvent } from '../src/index.ts';

interface Harness {
  readonly outcome: RunOutcome;
  readonly rules: Ruleset;
  readonly events: readonly TraceEvent[];
  readonly execs: string[];
}

async function withHandle(fn: (ipt: IptablesHandle, engine: Engine) => Promise<void>, opts: { readonly options?: IptablesHandleOptions; readonly faults?: Partial<IptablesFaultState> } = {}): Promise<Harness> {
  const engine = new Engine({ seed: 1 });
  let rules = freshRuleset();
  const faults = { ...noIptablesFaults(), ...opts.faults };
  const ipt = createIptablesHandle({
    engine,
    node: 'node-1',
    agent: 'node-1/test',
    backend: netfilterBackend(),
    store: { get: () => rules, set: (r) => (rules = r) },
    faults,
    ...(opts.options !== undefined ? { options: opts.options } : {}),
  });
  engine.spawn('node-1/test#1', 'main', 0, () => fn(ipt, engine));
  const outcome = await engine.run();
  const events = engine.events;
  return {
    outcome,
    rules,
    events,
    execs: events.filter((e) => e.type.startsWith('iptables.') && e.type !== 'iptables.lock-wait').map((e) => `t=${e.t} ${JSON.stringify(e['argv'])} → ${JSON.stringify(e['exit'])}`),
  };
}

async function caught(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error('expected a rejection');
}

describe('iptables handle', () => {
  it('should create, fill, list and check chains like go-iptables', async () => {
    const seen: unknown[] = [];
    const h = await withHandle(async (ipt) => {
      await ipt.newChain('nat', 'FLANNEL-POSTRTG');
      await ipt.append('nat', 'FLANNEL-POSTRTG', '-s', '198.18.0.0/16', '-d', '198.18.0.0/16', '-m', 'comment', '--comment', 'flanneld masq', '-j', 'RETURN');
      await ipt.appendUnique('nat', 'POSTROUTING', '-m', 'comment', '--comment', 'flanneld masq', '-j', 'FLANNEL-POSTRTG');
      await ipt.appendUnique('nat', 'POSTROUTING', '-m', 'comment', '--comment', 'flanneld masq', '-j', 'FLANNEL-POSTRTG');
      seen.push(await ipt.list('nat', 'FLANNEL-POSTRTG'));
      seen.push(await ipt.list('nat', 'POSTROUTING'));
      seen.push(await ipt.listChains('nat'));
      seen.push(await ipt.chainExists('nat', 'FLANNEL-POSTRTG'), await ipt.chainExists('nat', 'NOPE'));
      seen.push(await ipt.exists('nat', 'FLANNEL-POSTRTG', '-s', '198.18.0.0/16', '-d', '198.18.0.0/16', '-m', 'comment', '--comment', 'flanneld masq', '-j', 'RETURN'));
      seen.push(await ipt.exists('nat', 'FLANNEL-POSTRTG', '-j', 'MASQUERADE'));
    });
    expect(h.outcome.status).toBe('ok');
    expect(seen).toEqual([
      ['-N FLANNEL-POSTRTG', '-A FLANNEL-POSTRTG -s 198.18.0.0/16 -d 198.18.0.0/16 -m comment --comment "flanneld masq" -j RETURN'],
      ['-P POSTROUTING ACCEPT', '-A POSTROUTING -m comment --comment "flanneld masq" -j FLANNEL-POSTRTG'],
      ['PREROUTING', 'INPUT', 'OUTPUT', 'POSTROUTING', 'FLANNEL-POSTRTG'],
      true,
      false,
      true,
      false,
    ]);
  });

  it('should run one process per step, so appendUnique is a -C then an -A', async () => {
    const h = await withHandle(async (ipt) => {
      await ipt.appendUnique('nat', 'OUTPUT', '-j', 'RETURN');
    });
    expect(h.execs).toEqual(['t=1 "iptables -t nat -C OUTPUT -j RETURN --wait" → 1', 't=2 "iptables -t nat -A OUTPUT -j RETURN --wait" → 0']);
  });

  it('should throw go-iptables errors with the real message and exit status', async () => {
    let err: unknown;
    await withHandle(async (ipt) => {
      err = await caught(ipt.delete('nat', 'OUTPUT', '-j', 'RETURN'));
      await ipt.deleteIfExists('nat', 'OUTPUT', '-j', 'RETURN');
    });
    expect(isIptablesError(err)).toBe(true);
    if (!isIptablesError(err)) return;
    expect(err.message).toBe('running [iptables -t nat -D OUTPUT -j RETURN --wait]: exit status 1: iptables: Bad rule (does a matching rule exist in that chain?).');
    expect(err.exitCode).toBe(1);
    expect(err.isNotExist()).toBe(true);
  });

  it('should create or flush with clearChain, rename, and refuse to delete a non-empty chain', async () => {
    const seen: unknown[] = [];
    const h = await withHandle(async (ipt) => {
      await ipt.clearChain('nat', 'A');
      await ipt.append('nat', 'A', '-j', 'RETURN');
      await ipt.clearChain('nat', 'A');
      seen.push(await ipt.list('nat', 'A'));
      await ipt.append('nat', 'A', '-j', 'RETURN');
      await ipt.renameChain('nat', 'A', 'B');
      const e = await caught(ipt.deleteChain('nat', 'B'));
      seen.push(isIptablesError(e) ? e.exitCode : 'not an iptables error');
    });
    expect(h.outcome.status).toBe('ok');
    expect(seen[0]).toEqual(['-N A']);
    expect(seen[1]).not.toBe(0);
    expect(h.rules.tables.nat.chains['B']?.rules).toHaveLength(1);
  });

  it('should restore with --noflush, replacing only the chains the input names, and save one table', async () => {
    let saved = '';
    const h = await withHandle(async (ipt) => {
      await ipt.newChain('nat', 'ANTREA-NODE-PORT-LOCAL');
      await ipt.append('nat', 'ANTREA-NODE-PORT-LOCAL', '-p', 'tcp', '-m', 'tcp', '--dport', '61001', '-j', 'DNAT', '--to-destination', '198.18.0.5:8080');
      await ipt.append('nat', 'PREROUTING', '-j', 'RETURN');
      await ipt.restore('*nat\n:ANTREA-NODE-PORT-LOCAL - [0:0]\n-A ANTREA-NODE-PORT-LOCAL -p tcp -m tcp --dport 61001 -j DNAT --to-destination 198.18.0.6:8080\nCOMMIT\n', { noflush: true });
      saved = await ipt.save('nat');
    });
    expect(h.outcome.status).toBe('ok');
    expect(saved).toBe(
      [
        '*nat',
        ':PREROUTING ACCEPT [0:0]',
        ':INPUT ACCEPT [0:0]',
        ':OUTPUT ACCEPT [0:0]',
        ':POSTROUTING ACCEPT [0:0]',
        ':ANTREA-NODE-PORT-LOCAL - [0:0]',
        '-A PREROUTING -j RETURN',
        '-A ANTREA-NODE-PORT-LOCAL -p tcp -m tcp --dport 61001 -j DNAT --to-destination 198.18.0.6:8080',
        'COMMIT',
        '',
      ].join('\n'),
    );
    expect(h.events.find((e) => e.type === 'iptables.restore')).toMatchObject({ argv: 'iptables-restore --noflush --wait', exit: 0 });
  });

  it('should wait for a held xtables lock with --wait and give up with --wait N', async () => {
    const forever = await withHandle(
      async (ipt) => {
        await ipt.append('nat', 'OUTPUT', '-j', 'RETURN');
      },
      { faults: { lockHeldUntilMs: 500 } },
    );
    expect(forever.execs).toEqual(['t=501 "iptables -t nat -A OUTPUT -j RETURN --wait" → 0']);
    expect(forever.events.some((e) => e.type === 'iptables.lock-wait' && e['untilMs'] === 500)).toBe(true);

    let err: unknown;
    const bounded = await withHandle(
      async (ipt) => {
        err = await caught(ipt.append('nat', 'OUTPUT', '-j', 'RETURN'));
      },
      { faults: { lockHeldUntilMs: 5000 }, options: { lockWait: { seconds: 2 } } },
    );
    expect(bounded.execs).toEqual(['t=2000 "iptables -t nat -A OUTPUT -j RETURN --wait 2" → 4']);
    expect(isIptablesError(err) && err.stderr).toBe('Another app is currently holding the xtables lock. Stopped waiting after 2s.\n');

    const noWait = await withHandle(
      async (ipt) => {
        err = await caught(ipt.append('nat', 'OUTPUT', '-j', 'RETURN'));
      },
      { faults: { lockHeldUntilMs: 5000 }, options: { lockWait: 'no' } },
    );
    expect(noWait.execs).toEqual(['t=1 "iptables -t nat -A OUTPUT -j RETURN" → 4']);
    expect(isIptablesError(err) && err.stderr).toBe('Another app is currently holding the xtables lock. Perhaps you want to use the -w option?\n');
  });

  it('should fail the next commands with a resource problem, a restore at its line, and slow commands down', async () => {
    const errs: string[] = [];
    const h = await withHandle(
      async (ipt) => {
        for (let i = 0; i < 3; i++) {
          const e = await caught(ipt.append('nat', 'OUTPUT', '-j', 'RETURN')).catch((x: unknown) => x);
          errs.push(isIptablesError(e) ? `${e.exitCode} ${e.stderr.trim()}` : 'ok');
        }
        const e = await caught(ipt.restore('*nat\n:X - [0:0]\nCOMMIT\n', { noflush: true }));
        errs.push(isIptablesError(e) ? `${e.exitCode} ${e.stderr.trim()}` : 'ok');
      },
      { faults: { resourceFailures: 2, restoreFailAtLine: 2, slowExtraMs: 100, slowUntilMs: 50 } },
    ).catch((e: unknown) => {
      throw e;
    });
    expect(errs.slice(0, 2)).toEqual(['4 iptables: Resource temporarily unavailable.', '4 iptables: Resource temporarily unavailable.']);
    expect(errs[3]).toBe('1 iptables-restore: line 2 failed');
    expect(h.execs[0]).toBe('t=101 "iptables -t nat -A OUTPUT -j RETURN --wait" → 4');
    expect(h.rules.tables.nat.chains['X']).toBeUndefined();
  });
});
