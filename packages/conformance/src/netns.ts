/**
 * Network namespace bookkeeping: unique names per run, removal of namespaces an earlier killed run
 * left behind, and removal of this process's namespaces on exit, SIGINT, SIGTERM and SIGHUP.
 *
 * Names are `ncf-<pid>-<n>-<role>`. The pid says which process owns a namespace, so a stale one
 * (its owner is gone) can be told from one a concurrent run is using (two test workers, or two
 * teammates' test runs on the same machine): only the former is removed.
 */
import { run } from './exec.ts';

/** The prefix every conformance namespace starts with. */
export const NETNS_PREFIX = 'ncf-';

const OWNED = /^ncf-(\d+)-\d+-[a-z0-9]+$/;

/** Names of all network namespaces (`ip netns list`). */
export function listNetns(): string[] {
  return run('ip', ['netns', 'list'])
    .split('\n')
    .map((l) => l.trim().split(/\s+/)[0] ?? '')
    .filter((n) => n !== '')
    .sort();
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    // EPERM: the process exists but belongs to someone else.
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The owning pid of a conformance namespace name, or undefined for any other name. */
export function ownerOf(name: string): number | undefined {
  const m = OWNED.exec(name);
  return m === null ? undefined : Number(m[1]);
}

/**
 * Deletes conformance namespaces whose owning process no longer exists (an earlier run that was
 * killed before it could clean up). Returns the names removed.
 */
export function removeStaleNetns(): string[] {
  const removed: string[] = [];
  for (const name of listNetns()) {
    const pid = ownerOf(name);
    if (pid === undefined || alive(pid)) continue;
    deleteNetns(name);
    removed.push(name);
  }
  return removed;
}

/** Deletes one namespace; a namespace that is already gone is not an error. */
export function deleteNetns(name: string): void {
  try {
    run('ip', ['netns', 'del', name]);
  } catch (e) {
    if (!listNetns().includes(name)) return;
    throw e;
  }
}

let sequence = 0; // tidy-allow: namespace names must be unique per process, not per lab

/** A fresh name prefix for one lab of this process: `ncf-<pid>-<n>`. */
export function nextPrefix(): string {
  return `${NETNS_PREFIX}${process.pid}-${sequence++}`;
}

const owned = new Set<string>(); // tidy-allow: the namespaces this process made, so an interrupt can remove them
let handlersInstalled = false; // tidy-allow: signal handlers belong to the process; install them once

function cleanupAll(): void {
  for (const name of [...owned].sort()) {
    try {
      deleteNetns(name);
    } catch {
      // Best effort while exiting; the next run's stale sweep removes what is left.
    }
    owned.delete(name);
  }
}

function installHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  process.on('exit', cleanupAll);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const handler = (): void => {
      cleanupAll();
      process.removeListener(sig, handler);
      // Alone, we stand between the signal and its default action (exit): raise it again.
      // Another listener (a test runner) got the same signal and decides for itself.
      if (process.listenerCount(sig) === 0) process.kill(process.pid, sig);
    };
    process.on(sig, handler);
  }
}

/** Creates a namespace and records it for removal at exit or on a signal. */
export function createNetns(name: string): void {
  installHandlers();
  run('ip', ['netns', 'add', name]);
  owned.add(name);
}

/** Deletes a namespace created with {@link createNetns}. */
export function releaseNetns(name: string): void {
  deleteNetns(name);
  owned.delete(name);
}

/** Namespaces this process created and has not released (for tests of the cleanup). */
export function ownedNetns(): string[] {
  return [...owned].sort();
}
