import { join } from 'node:path';
import { bytesTable, capacityResultFiles, checkTable, examplesTable, figuresTable, projectionTable, readCapacity, replicaLagText, runLine, writeLimitText } from './capacity-report';

/**
 * docs/capacity.md's figures, generated (`npm run docs`, checked by `npm run openapi:check` and
 * tools/docs/docs.test.ts) from the newest capacity result in bench/results, so the document always
 * states what the last committed `npm run bench -- --capacity` measured and what the model makes
 * of it. The check against a run of another size comes from the newest result that has one.
 */
export function capacityBlocks(projectRoot: string): Record<string, string> {
  const files = capacityResultFiles(join(projectRoot, 'bench/results'));
  const none = 'No capacity run is recorded in bench/results yet: `npm run bench -- --capacity`, then `npm run docs`.';
  if (files.length === 0) {
    return Object.fromEntries(['run', 'figures', 'bytes', 'replica-lag', 'examples', 'write-limit', 'projection', 'check'].map((name) => [`capacity-${name}`, none]));
  }
  const latest = readCapacity(files[0]);
  const checked = files.map((file) => readCapacity(file)).find((r) => r.check);
  const source = `From \`${files[0].slice(projectRoot.length).replace(/^\//, '')}\`.`;
  return {
    'capacity-run': `${runLine(latest)} ${source}`,
    'capacity-figures': figuresTable(latest),
    'capacity-bytes': bytesTable(latest),
    'capacity-replica-lag': replicaLagText(latest),
    'capacity-examples': examplesTable(latest.figures),
    'capacity-write-limit': writeLimitText(latest.figures),
    'capacity-projection': projectionTable(latest),
    'capacity-check': checked ? `${checkTable(checked.check)}\n\n(Run of ${checked.date}: ${checked.data.orders.toLocaleString('en-US')} orders, ${checked.data.events.toLocaleString('en-US')} events.)` : checkTable(undefined),
  };
}
