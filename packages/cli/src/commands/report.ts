/**
 * `netsim report TRACE.jsonl -o FILE.html`: the HTML report of a saved `--trace`. The JSON-lines
 * trace is the only input a report needs. Exit 2 when the trace cannot be read or holds several
 * runs and `--scenario` names none of them.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { Command } from 'commander';
import { reportHtml } from '@netsim/report';

export interface ReportIo {
  readonly stdout: (s: string) => void;
  readonly stderr: (s: string) => void;
}

const defaultIo: ReportIo = { stdout: (s) => void process.stdout.write(s), stderr: (s) => void process.stderr.write(s) };

/** Runs the command; returns the exit status. */
export function runReport(trace: string, opts: { readonly output: string; readonly scenario?: string }, io: ReportIo = defaultIo): number {
  let text: string;
  try {
    text = readFileSync(trace === '-' ? 0 : trace, 'utf8');
  } catch (e) {
    io.stderr(`netsim report: ${(e as Error).message}\n`);
    return 2;
  }
  let html: string;
  try {
    html = reportHtml(text, opts.scenario !== undefined ? { name: opts.scenario } : {});
  } catch (e) {
    io.stderr(`netsim report: ${trace === '-' ? '<stdin>' : trace}: ${(e as Error).message}\n`);
    return 2;
  }
  try {
    writeFileSync(opts.output, html);
  } catch (e) {
    io.stderr(`netsim report: ${(e as Error).message}\n`);
    return 2;
  }
  io.stdout(`netsim report: wrote ${opts.output}\n`);
  return 0;
}

/** The `report` command. */
export function reportCommand(): Command {
  return new Command('report')
    .description('write a self-contained HTML timeline report of a saved --trace (JSON lines)')
    .argument('<trace>', 'a JSON-lines trace (netsim replay --trace FILE), or - for stdin')
    .requiredOption('-o, --output <file>', 'the HTML file to write')
    .option('--scenario <name>', 'the run to draw when the trace holds several scenarios')
    .action((trace: string, opts: { output: string; scenario?: string }) => {
      process.exitCode = runReport(trace, opts);
    });
}
