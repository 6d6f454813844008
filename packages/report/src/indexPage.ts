/**
 * `renderIndex`: the page linking a set of reports, e.g. `netsim replay --report DIR`'s
 * `index.html`: the replay table, each row linking its scenario's report. Self-contained, like
 * the reports.
 */
import { esc } from './html.ts';

export interface IndexRow {
  readonly cells: readonly string[];
  /** The report's file name relative to the index (no link when absent: the run did not happen). */
  readonly href?: string;
  /** Whether the row met its expectation: the verdict is spelt out, never colour alone. */
  readonly ok: boolean;
}

export function renderIndex(title: string, header: readonly string[], rows: readonly IndexRow[]): string {
  const body = rows
    .map((r) => {
      const cells = r.cells.map((c, i) => (i === 0 && r.href !== undefined ? `<td><a href="${esc(encodeURI(r.href))}">${esc(c)}</a></td>` : `<td>${esc(c)}</td>`)).join('');
      return `<tr class="${r.ok ? 'ok' : 'bad'}">${cells}</tr>`;
    })
    .join('\n');
  return [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">`,
    `<title>${esc(title)}</title>`,
    '<style>body{font-family:system-ui,sans-serif;margin:1rem;color:#1b1f24}table{border-collapse:collapse;font-size:.85rem}th,td{border:1px solid #d0d7de;padding:.25rem .5rem;text-align:left;vertical-align:top}tr.bad td:last-child{color:#cf222e;font-weight:700}.wrap{overflow-x:auto}</style>',
    `</head><body><h1>${esc(title)}</h1><div class="wrap"><table><thead><tr>${header.map((h) => `<th scope="col">${esc(h)}</th>`).join('')}</tr></thead><tbody>`,
    body,
    '</tbody></table></div></body></html>',
    '',
  ].join('\n');
}
