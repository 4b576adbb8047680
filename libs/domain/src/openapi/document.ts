import { type ErrorCode, PARTNER_API_VERSION, PARTNER_BASE_PATH } from '@lop/contract';
import { generateOpenApiDocument, type OpenAPIObject } from 'trpc-to-openapi';
import { acceptsRequestBody, forEachOpenApiProcedure } from 'trpc-to-openapi';
import { ERROR_CODES } from '../http/errors';
import { errorEnvelope } from '../http/envelope';
import { partnerRouter } from '../routers';
import type { ProcedureMeta } from '../trpc';
import { errorResponseObject, polishDocument } from './polish';
import { openApiWebhooks, WEBHOOKS_TAG } from './webhooks';

export interface DocumentOptions {
  sandboxBaseUrl?: string;
  productionBaseUrl?: string;
}

// Failures any authenticated route can answer.
const UNIVERSAL_ERRORS: ErrorCode[] = ['invalid_request', 'unauthorized', 'internal_error', 'unavailable'];
// Failures of the JSON body reader, on every route that takes a body.
const BODY_ERRORS: ErrorCode[] = ['payload_too_large', 'unsupported_media_type'];

/**
 * The OpenAPI 3.1 description, generated from the procedures, then finished so it tells the
 * truth: our error envelope instead of the library's, real success statuses, and only the
 * configured servers. It holds no keys and no tenant data.
 */
export function buildOpenApiDocument(options: DocumentOptions = {}): OpenAPIObject {
  const document = generateOpenApiDocument(partnerRouter, {
    title: 'Laboratory Ordering Partner API',
    description:
      "Server-to-server API through which a clinical laboratory's partners check what the laboratory offers, place and cancel test orders, follow them through collection and testing, and read released results.\n\nA running service also serves the [sandbox console](/console/): try every route with synthetic orders and a sandbox key, see each action as the request documented here (copyable as curl, TypeScript and Python), and register sandbox webhook endpoints.",
    version: PARTNER_API_VERSION,
    baseUrl: PARTNER_BASE_PATH,
    securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', description: 'API key: `Authorization: Bearer <API_KEY>`.' } },
    defs: { ErrorEnvelope: errorEnvelope },
  });

  // The API is offered under each partner's agreement with the laboratory: no public licence, so an
  // SPDX reference of our own (LicenseRef-), and the contact every partner already has.
  document.info.license = { name: "Proprietary: used under your partner agreement with the laboratory", identifier: 'LicenseRef-Partner-Agreement' } as typeof document.info.license;
  document.info.contact = { name: "The laboratory's partner integration team, as named in your partner agreement" };

  const metaByRoute = new Map<string, ProcedureMeta>();
  forEachOpenApiProcedure(partnerRouter._def.procedures, ({ meta }) => {
    const m = meta as ProcedureMeta;
    metaByRoute.set(`${m.openapi!.method.toLowerCase()} ${m.openapi!.path}`, m);
  });

  for (const [path, item] of Object.entries(document.paths ?? {})) {
    for (const [method, operation] of Object.entries(item as Record<string, any>)) {
      const meta = metaByRoute.get(`${method} ${path}`);
      if (!meta || !operation?.responses) continue;
      const responses: Record<string, unknown> = {};
      const success = operation.responses['200'];
      // A route that answers a resource of another media type (the FHIR view) says so, schema unchanged.
      if (meta.responseContentType && success?.content?.['application/json']) {
        success.content = { [meta.responseContentType]: success.content['application/json'] };
      }
      responses[String(meta.successStatus ?? 200)] = success;
      const byStatus = new Map<number, ErrorCode[]>();
      const codes = [
        ...UNIVERSAL_ERRORS,
        ...(meta.scope && meta.scope !== 'none' ? (['forbidden'] as ErrorCode[]) : []),
        ...(acceptsRequestBody(meta.openapi!.method) ? BODY_ERRORS : []),
        ...(meta.errors ?? []),
      ];
      for (const code of codes) byStatus.set(ERROR_CODES[code].status, [...(byStatus.get(ERROR_CODES[code].status) ?? []), code]);
      for (const [status, list] of [...byStatus.entries()].sort((a, b) => a[0] - b[0])) responses[String(status)] = errorResponseObject(list);
      operation.responses = responses;
      // Read (and removed) by polishDocument.
      if (meta.rateBudget) operation['x-spends-rate-budget'] = true;
      if (meta.scope && meta.scope !== 'none') {
        operation['x-required-scope'] = meta.scope;
        operation.description = `${operation.description ?? ''}\n\nRequired scope: \`${meta.scope}\`.`.trim();
      }
    }
  }

  // Paths carry the whole base path: with no servers listed, a client resolves them against the
  // document's own origin, so `/v1/...` alone would point outside the API.
  document.paths = Object.fromEntries(Object.entries(document.paths ?? {}).map(([path, item]) => [`${PARTNER_BASE_PATH}${path}`, item]));

  const servers = [
    options.sandboxBaseUrl && { url: serverOrigin(options.sandboxBaseUrl), description: 'Sandbox' },
    options.productionBaseUrl && { url: serverOrigin(options.productionBaseUrl), description: 'Production' },
  ].filter(Boolean) as { url: string; description: string }[];
  if (servers.length > 0) document.servers = servers;
  else delete document.servers;
  polishDocument(document);
  // OpenAPI 3.1 webhooks: each event type's delivery (headers and body), shown beside the routes.
  (document as OpenAPIObject & { webhooks?: unknown }).webhooks = openApiWebhooks();
  document.tags = [...(document.tags ?? []), WEBHOOKS_TAG];
  return document;
}

/** A configured base URL may be given as the spec's `{base_url}` (ending in the base path) or as the origin. */
function serverOrigin(baseUrl: string): string {
  const trimmed = baseUrl.replace(/\/+$/, '');
  return trimmed.endsWith(PARTNER_BASE_PATH) ? trimmed.slice(0, -PARTNER_BASE_PATH.length) : trimmed;
}
