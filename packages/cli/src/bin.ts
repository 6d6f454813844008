#!/usr/bin/env node
/**
 * `netsim` — the command line. Each subcommand lives in `commands/` and registers itself in
 * `program.ts`; this file only runs it and turns its outcome into the exit status.
 */
import { main } from './program.ts';

// Piped into `head`: the reader went away, so stop quietly with the status so far.
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw e;
});
process.exitCode = await main(process.argv);
