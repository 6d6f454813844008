import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, inject, it } from 'vitest';
import { run } from '../src/exec.ts';
import type { LabNames } from '../src/lab.ts';
import { listNetns, nextPrefix, ownerOf, removeStaleNetns } from '../src/netns.ts';

const env = inject('conformanceEnv');
const root = fileURLToPath(new URL('../../../', import.meta.url));
const holdLab = fileURLToPath(new URL('./fixtures/holdLab.ts', import.meta.url));

function allNames(n: LabNames): string[] {
  return [n.node, n.peers.client, n.peers.uplink2, n.peers.pod];
}

/** A pid that belonged to a process which has exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(child.stdout);
}

interface Holder {
  readonly names: LabNames;
  /** Resolves with the exit code (or -1 when a signal ended it). */
  readonly exited: Promise<number>;
  kill(sig: NodeJS.Signals): void;
}

/** Starts holdLab.ts in `mode` and resolves once it has printed its lab's namespace names. */
function startHolder(mode: 'wait' | 'exit'): Promise<Holder> {
  const child = spawn(process.execPath, ['--import', 'tsx', holdLab, mode], { cwd: root, stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise<number>((resolve) => child.on('exit', (code) => resolve(code ?? -1)));
  return new Promise<Holder>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString('utf8');
      const nl = out.indexOf('\n');
      if (nl >= 0) resolve({ names: JSON.parse(out.slice(0, nl)) as LabNames, exited, kill: (sig) => child.kill(sig) });
    });
    child.on('error', reject);
    void exited.then((code) => {
      if (!out.includes('\n')) reject(new Error(`holdLab exited (${code}) before printing its namespaces`));
    });
  });
}

describe('netns names', () => {
  it('should tell the owning pid of a conformance namespace and ignore other names', () => {
    expect(ownerOf('ncf-1234-0-node')).toBe(1234);
    expect(ownerOf('ncf-1234-12-uplink2')).toBe(1234);
    expect(ownerOf('nftx-a1')).toBeUndefined();
    expect(ownerOf('ncf-x-0-node')).toBeUndefined();
    expect(nextPrefix()).toMatch(new RegExp(`^ncf-${process.pid}-\\d+$`));
  });
});

describe.skipIf(!env.ok)('netns cleanup (real namespaces)', () => {
  it('should remove namespaces whose owner is gone and keep those of live processes', () => {
    const stale = `ncf-${deadPid()}-0-node`;
    const live = `${nextPrefix()}-node`;
    run('ip', ['netns', 'add', stale]);
    run('ip', ['netns', 'add', live]);
    try {
      removeStaleNetns();
      const left = listNetns();
      expect(left).not.toContain(stale);
      expect(left).toContain(live);
    } finally {
      run('ip', ['netns', 'del', live]);
      if (listNetns().includes(stale)) run('ip', ['netns', 'del', stale]);
    }
  });

  for (const sig of ['SIGTERM', 'SIGINT'] as const) {
    it(`should remove a lab's namespaces when its process gets ${sig}`, async () => {
      const holder = await startHolder('wait');
      expect(listNetns()).toEqual(expect.arrayContaining(allNames(holder.names)));
      holder.kill(sig);
      await holder.exited;
      const left = listNetns();
      expect(allNames(holder.names).filter((n) => left.includes(n))).toEqual([]);
    });
  }

  it("should remove a lab's namespaces when its process exits without destroying the lab", async () => {
    const holder = await startHolder('exit');
    expect(await holder.exited).toBe(0);
    const left = listNetns();
    expect(allNames(holder.names).filter((n) => left.includes(n))).toEqual([]);
  });
});
