/**
 * Where the user ran the command. Under `pnpm netsim …` (or any package script) the package
 * manager starts the process in the package's own directory and keeps the user's directory in
 * `INIT_CWD`; paths on the command line are the user's, so they resolve from there. A script that
 * changes directory itself (`cd sub && netsim …`) runs elsewhere than the package root, and then
 * the process's own directory wins.
 */
import { dirname, isAbsolute, relative, resolve } from 'node:path';

/** The directory command-line paths resolve from. */
export function userCwd(env: NodeJS.ProcessEnv = process.env, cwd: string = process.cwd()): string {
  const init = env['INIT_CWD'];
  const manifest = env['npm_package_json'];
  if (init !== undefined && init !== '' && manifest !== undefined && resolve(dirname(manifest)) === resolve(cwd)) return resolve(init);
  return cwd;
}

/** A command-line path, resolved from the user's directory. */
export function userPath(path: string): string {
  return resolve(userCwd(), path);
}

/** A path as the user would type it: relative to their directory when it lies inside it. */
export function displayPath(path: string): string {
  const rel = relative(userCwd(), path);
  return rel === '' ? '.' : rel.startsWith('..') || isAbsolute(rel) ? path : rel;
}

/**
 * How the user started netsim, for the command lines the CLI prints ("reproduce with: …"):
 * `pnpm netsim` (or `npm run netsim`, `yarn netsim`) when a package script named `netsim` ran
 * it, else `netsim` (the installed bin, `npx netsim` included).
 */
export function invokedAs(env: NodeJS.ProcessEnv = process.env): string {
  if (env['npm_lifecycle_event'] !== 'netsim') return 'netsim';
  const agent = env['npm_config_user_agent'] ?? '';
  return agent.startsWith('pnpm/') ? 'pnpm netsim' : agent.startsWith('yarn/') ? 'yarn netsim' : 'npm run netsim';
}
