/**
 * The parts of the partner docs that restate the code — scopes per endpoint, the lifecycle and
 * transition tables, every enumeration, the exception policy, event types, delivery headers, the
 * webhook samples, the sandbox scenarios, the audited and the replica reads — are generated into marked blocks of docs/*.md:
 *
 *   <!-- generated:name (npm run docs) -->
 *   …
 *   <!-- /generated:name -->
 *
 * Everything outside the blocks is prose, kept by hand.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EVENT_TYPES, LIFECYCLE_DETAILS, type LifecycleDetail, OPENAPI_PATH, PARTNER_BASE_PATH, SCOPES } from '@lop/contract';
import * as domain from '@lop/domain';
import {
  buildAsyncApiDocument,
  buildOpenApiDocument,
  ENUM_DOCUMENTATION,
  EXCEPTION_CATEGORIES,
  partnerCanCancel,
  partnerRouter,
  PROJECT_ROOT,
  TRANSITIONS,
  type ProcedureMeta,
} from '@lop/domain';
import { capacityBlocks } from '../bench/capacity-docs';

type Json = Record<string, any>;

const row = (cells: string[]) => `| ${cells.join(' | ')} |`;
const table = (header: string[], rows: string[][]) => [row(header), row(header.map(() => '---')), ...rows.map(row)].join('\n');
const code = (text: string) => `\`${text}\``;

/** Every procedure of the partner router, REST routes and the console's alike, by its tRPC path. */
function procedures(): { path: string; meta: ProcedureMeta }[] {
  const record = partnerRouter._def.procedures as unknown as Record<string, { _def: { meta?: ProcedureMeta } }>;
  return Object.entries(record).map(([path, procedure]) => ({ path, meta: procedure._def.meta ?? ({} as ProcedureMeta) }));
}

/** The REST routes among them (the procedures with an OpenAPI path). */
function routes(): { method: string; path: string; meta: ProcedureMeta }[] {
  return procedures()
    .filter((p) => p.meta.openapi)
    .map((p) => ({ method: p.meta.openapi!.method, path: p.meta.openapi!.path, meta: p.meta }));
}

const routeOf = (p: { path: string; meta: ProcedureMeta }) => (p.meta.openapi ? code(`${p.meta.openapi.method} ${p.meta.openapi.path}`) : `the console's ${code(p.path)}`);

/** docs/audit.md: the reads whose meta says `audit`, with the action their records carry (the tRPC path). */
function auditedReadsTable(): string {
  return table(
    ['route', 'action'],
    procedures()
      .filter((p) => p.meta.audit)
      .map((p) => [routeOf(p), `${code(p.path)}${p.meta.audit!.details?.length ? ` (${p.meta.audit!.details.map(code).join(', ')} in \`details\`)` : ''}`]),
  );
}

/** docs/operations.md: the procedures whose meta says `reads: 'replica'`. */
function replicaReadsList(): string {
  return procedures()
    .filter((p) => p.meta.reads === 'replica')
    .map((p) => `- ${routeOf(p)}${p.meta.openapi?.summary ? ` — ${p.meta.openapi.summary}` : ''}`)
    .join('\n');
}

/** docs/laboratory-operations.md: the categories the partner owns when opened, from the exception policy. */
function partnerOwnedCategoriesList(): string {
  return Object.entries(EXCEPTION_CATEGORIES)
    .filter(([, p]) => p.owner_role === 'partner')
    .map(([category]) => code(category))
    .join(', ');
}

function scopesTable(): string {
  const endpoints = routes().map((r) => [
    code(`${r.method} ${r.path}`),
    !r.meta.scope || r.meta.scope === 'none' ? 'none (any valid, active key)' : code(r.meta.scope),
    r.meta.openapi?.summary ?? '',
  ]);
  const used = new Set(routes().map((r) => r.meta.scope));
  const unused = SCOPES.filter((s) => !used.has(s));
  return [
    table(['endpoint', 'scope', 'what it does'], [...endpoints, [code(`GET ${OPENAPI_PATH}`), 'no key at all', 'The OpenAPI document']]),
    ...(unused.length > 0 ? ['', `Scopes defined but used by no endpoint yet: ${unused.map(code).join(', ')}.`] : []),
  ].join('\n');
}

function errorsByEndpointTable(document: Json): string {
  const rows: string[][] = [];
  for (const [path, item] of Object.entries(document.paths as Record<string, Json>)) {
    for (const [method, operation] of Object.entries(item)) {
      const codes = Object.entries(operation.responses as Record<string, Json>)
        .filter(([status]) => Number(status) >= 400)
        .flatMap(([status, response]) => Object.keys(response.content?.['application/json']?.examples ?? {}).map((c) => `${status} ${code(c)}`));
      rows.push([code(`${method.toUpperCase()} ${path.slice(PARTNER_BASE_PATH.length)}`), codes.join(', ')]);
    }
  }
  return table(['endpoint', 'documented failures'], rows);
}

function lifecycleTable(): string {
  return table(
    ['lifecycle_detail', 'lifecycle', 'next_action', 'partner can cancel'],
    Object.entries(LIFECYCLE_DETAILS).map(([detail, r]) => [code(detail), code(r.lifecycle), code(r.next_action), partnerCanCancel(detail as LifecycleDetail) ? 'yes' : 'no (409)']),
  );
}

function transitionsTable(): string {
  return table(
    ['operation', 'from', 'to'],
    Object.entries(TRANSITIONS).map(([name, t]) => [code(name), (t.from as readonly string[]).map(code).join(', '), code(t.to)]),
  );
}

/** The exception policy (libs/domain/src/exceptions/exceptions.schemas.ts): one row per category. */
function exceptionCategoriesTable(): string {
  return table(
    ['category', 'severity', 'owner_role', 'entity_type', 'retryable', 'next_action while the partner owns it', 'opened when'],
    Object.entries(EXCEPTION_CATEGORIES).map(([category, p]) => [code(category), p.severity, p.owner_role, p.entity_type, String(p.retryable), code(p.partner_next_action), p.opened_when]),
  );
}

/** docs/lifecycle.md: the next_action an open exception the partner owns asks, from the same policy table. */
function exceptionNextActionsTable(): string {
  const rows = Object.entries(EXCEPTION_CATEGORIES);
  const handedOver = new Map<string, string[]>();
  for (const [category, p] of rows.filter(([, p]) => p.owner_role !== 'partner')) handedOver.set(p.partner_next_action, [...(handedOver.get(p.partner_next_action) ?? []), category]);
  return table(
    ['your newest open exception', code('next_action')],
    [
      ...rows.filter(([, p]) => p.owner_role === 'partner').map(([category, p]) => [code(category), code(p.partner_next_action)]),
      ...[...handedOver].map(([action, categories]) => [`${categories.map(code).join(', ')}, when the laboratory gives one to you`, code(action)]),
    ],
  );
}

function enumerationsList(document: Json): string {
  const sections: string[] = [];
  for (const [name, schema] of Object.entries(document.components.schemas as Record<string, Json>)) {
    if (!Array.isArray(schema.enum)) continue;
    const values = (schema['x-enumDescriptions'] ?? {}) as Record<string, string>;
    sections.push(`### ${name}\n\n${schema.description ?? ''}\n\n${table(['value', 'meaning'], schema.enum.map((v: string) => [code(v), values[v] ?? '']))}`);
  }
  return sections.join('\n\n');
}

function eventTypesTable(): string {
  const values = ENUM_DOCUMENTATION.EventType.values;
  return table(['type', 'meaning'], EVENT_TYPES.map((t) => [code(t), values[t]]));
}

function eventFieldsTable(asyncapi: Json): string {
  const schemas = asyncapi.components.schemas;
  const fields = (schema: Json, prefix = '') =>
    Object.entries(schema.properties as Record<string, Json>).map(([name, property]) => [
      code(`${prefix}${name}`),
      (schema.required ?? []).includes(name) ? 'always' : 'when applicable',
      (property.description ?? (property.$ref ? schemas[property.$ref.split('/').pop()]?.description : '') ?? '').replace(/\n/g, ' '),
    ]);
  return table(['field', 'present', 'notes'], [...fields(schemas.Event).filter(([f]) => f !== code('data')), ...fields(schemas.EventData, 'data.')]);
}

const sample = (file: string, language: string) => `\`\`\`${language}\n${readFileSync(join(PROJECT_ROOT, file), 'utf8').trimEnd()}\n\`\`\``;

interface ScenarioLike {
  scenario: string;
  steps?: unknown;
  events?: unknown;
}

/** The sandbox scenarios, when the domain exports them (an array or record of `{ scenario, steps, events }`). */
export function findScenarios(exports: Record<string, unknown>): ScenarioLike[] | null {
  const isScenario = (v: unknown): v is ScenarioLike => !!v && typeof v === 'object' && typeof (v as ScenarioLike).scenario === 'string' && Array.isArray((v as ScenarioLike).events);
  for (const value of Object.values(exports)) {
    if (Array.isArray(value) && value.length > 0 && value.every(isScenario)) return value;
    if (value && typeof value === 'object' && !Array.isArray(value)) {
      const entries = Object.entries(value as Record<string, unknown>);
      if (entries.length > 0 && entries.every(([, v]) => v && typeof v === 'object' && Array.isArray((v as ScenarioLike).events))) {
        return entries.map(([name, v]) => ({ scenario: (v as ScenarioLike).scenario ?? name, ...(v as object) }) as ScenarioLike);
      }
    }
  }
  return null;
}

function scenariosTable(): string {
  const scenarios = findScenarios(domain as unknown as Record<string, unknown>);
  if (!scenarios) {
    return '_The sandbox simulator has not shipped in this version yet; once it does, this table lists every scenario with its steps and events, and `GET /v1/sandbox/scenarios` answers the same list live._';
  }
  const steps = (s: ScenarioLike) => (Array.isArray(s.steps) ? String(s.steps.length) : String(s.steps ?? ''));
  return table(['scenario', 'steps', 'events emitted, in order'], scenarios.map((s) => [code(s.scenario), steps(s), (s.events as string[]).map(code).join(', ')]));
}

/**
 * The version strings as the published artifacts carry them (the documents, a delivery's headers,
 * the health schema's example, an event's version), so the table cannot state one the service
 * does not send.
 */
function versionsTable(document: Json, asyncapi: Json): string {
  const header = domain.deliveryHeaders({ secret: 'whsec_docs', timestamp: 0, body: '{}', deliveryId: 'docs', eventId: 'docs' })['x-partner-api-version'];
  const firstPath = Object.keys(document.paths ?? {})[0] ?? '';
  const pathVersion = firstPath.slice(PARTNER_BASE_PATH.length + 1).split('/')[0];
  const eventVersion = asyncapi.components.messages['order.created'].examples[0].payload.version;
  const buildExample = document.components.schemas.Health.properties.version.example;
  return table(
    ['what', 'value', 'where you see it', 'what it means'],
    [
      ['API version', code(document.info.version), `the ${code(`/${pathVersion}`)} path segment; OpenAPI ${code('info.version')} (${code(document.info.version)}); AsyncAPI ${code('info.version')} (${code(asyncapi.info.version)}); webhook header ${code('x-partner-api-version')} (${code(header)})`, 'the contract you code against; changes only with a new, incompatible API'],
      ['Event payload version', code(String(eventVersion)), `${code('version')} of every event (stream and webhook body), an integer`, 'the schema version of the event object within the API version'],
      ['Service build', code(buildExample), `${code('version')} of ${code('GET /v1/health')}, a string`, 'which release of the service answered; changes with every release, says nothing about compatibility'],
    ],
  );
}

/** Every generated block, by name. */
export function generatedBlocks(): Record<string, string> {
  const document = buildOpenApiDocument() as Json;
  const asyncapi = buildAsyncApiDocument();
  return {
    scopes: scopesTable(),
    'errors-by-endpoint': errorsByEndpointTable(document),
    lifecycle: lifecycleTable(),
    transitions: transitionsTable(),
    'exception-categories': exceptionCategoriesTable(),
    'exception-next-actions': exceptionNextActionsTable(),
    'audited-reads': auditedReadsTable(),
    'replica-reads': replicaReadsList(),
    'partner-owned-categories': partnerOwnedCategoriesList(),
    enumerations: enumerationsList(document),
    'event-types': eventTypesTable(),
    'event-fields': eventFieldsTable(asyncapi),
    'webhook-sample-typescript': sample('tools/examples/webhooks/verify-webhook.ts', 'ts'),
    'webhook-sample-python': sample('tools/examples/webhooks/verify_webhook.py', 'python'),
    scenarios: scenariosTable(),
    versions: versionsTable(document, asyncapi as Json),
    // docs/capacity.md: the newest `npm run bench -- --capacity` result and the model applied to it.
    ...capacityBlocks(PROJECT_ROOT),
  };
}

const BLOCK = /<!-- generated:([a-z0-9-]+)[^>]*-->\n[\s\S]*?<!-- \/generated:\1 -->/g;

/** The markdown with every generated block replaced by what the code says now. */
export function fillBlocks(markdown: string, blocks: Record<string, string>): string {
  return markdown.replace(BLOCK, (_match, name: string) => {
    if (!(name in blocks)) throw new Error(`unknown generated block "${name}"`);
    return `<!-- generated:${name} (npm run docs) -->\n${blocks[name]}\n<!-- /generated:${name} -->`;
  });
}

export const DOC_FILES = [
  'README.md',
  'docs/getting-started.md',
  'docs/authentication.md',
  'docs/idempotency.md',
  'docs/lifecycle.md',
  'docs/events.md',
  'docs/results-reports-exceptions.md',
  'docs/webhooks.md',
  'docs/sandbox.md',
  'docs/errors.md',
  'docs/versioning.md',
  'docs/capacity.md',
  'docs/audit.md',
  'docs/operations.md',
  'docs/laboratory-operations.md',
];
