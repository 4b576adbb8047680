import { PARTNER_BASE_PATH, type ProcedureScope } from '@lop/contract';

/**
 * The partner REST route behind each tRPC procedure the console calls, so every console action
 * can be shown (and copied) as the request a partner's own code would send. The browser bundle
 * cannot import the router itself (it is server code): the tables come from its meta, generated
 * into rest-routes.generated.ts (`npm run console:routes`; the drift check keeps them current).
 */
import { GENERATED_CONSOLE_PROCEDURE_SCOPES, GENERATED_REST_ROUTES } from './rest-routes.generated';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface RestRoute {
  method: HttpMethod;
  /** Below the base path, with {param} placeholders, e.g. /v1/orders/{orderId}. */
  path: string;
  /** What REST answers on success (201 for a created order). */
  successStatus: number;
  /** The scope a key needs for it; `none` when any valid key may call it. */
  scope: ProcedureScope;
  /** REST's media type for a success that is not the JSON envelope (the FHIR view). */
  responseContentType?: string;
}

/** The partner REST route behind each procedure that has one. */
export const REST_ROUTES: Readonly<Record<string, RestRoute>> = GENERATED_REST_ROUTES;

/** Scopes of the console-only procedures (tRPC, no REST route). */
export const CONSOLE_PROCEDURE_SCOPES: Readonly<Record<string, ProcedureScope>> = GENERATED_CONSOLE_PROCEDURE_SCOPES;

/** The scope a procedure needs, as its meta states it. */
export function scopeOf(procedure: string): ProcedureScope {
  const scope = REST_ROUTES[procedure]?.scope ?? CONSOLE_PROCEDURE_SCOPES[procedure];
  if (!scope) throw new Error(`no scope known for ${procedure}: run \`npm run console:routes\``);
  return scope;
}

/** A partner request, ready to show or turn into code. */
export interface RestRequest {
  method: HttpMethod;
  /** Template as the OpenAPI document names it (with the base path), for the typed client. */
  pathTemplate: string;
  pathParams: Record<string, string>;
  query: Record<string, string>;
  /** The JSON body of a POST/PUT, exactly as sent. */
  body?: unknown;
  /** Request headers besides Authorization (which is always sent, and always masked on screen). */
  headers: Record<string, string>;
  /** Absolute URL, query included. */
  url: string;
  successStatus: number;
  responseContentType?: string;
}

/**
 * The REST request equivalent to calling `procedure` with `input`: path parameters fill the
 * template, the rest goes to the query string (GET) or the JSON body (otherwise), as
 * trpc-to-openapi maps them. Null for console-only procedures (no REST route).
 */
export function restRequestFor(procedure: string, input: unknown, origin: string, extraHeaders: Record<string, string> = {}): RestRequest | null {
  const route = REST_ROUTES[procedure];
  if (!route) return null;
  const rest: Record<string, unknown> = { ...((input ?? {}) as Record<string, unknown>) };
  const pathParams: Record<string, string> = {};
  const path = route.path.replace(/\{(\w+)\}/g, (_m, name: string) => {
    const value = String(rest[name] ?? '');
    pathParams[name] = value;
    delete rest[name];
    return encodeURIComponent(value);
  });
  const query: Record<string, string> = {};
  let body: unknown;
  if (route.method === 'GET') {
    for (const [name, value] of Object.entries(rest)) if (value !== undefined && value !== null) query[name] = String(value);
  } else if (Object.keys(rest).length > 0) {
    body = rest;
  }
  const search = new URLSearchParams(query).toString();
  const headers: Record<string, string> = { ...extraHeaders };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  return {
    method: route.method,
    pathTemplate: `${PARTNER_BASE_PATH}${route.path}`,
    pathParams,
    query,
    body,
    headers,
    url: `${origin}${PARTNER_BASE_PATH}${path}${search ? `?${search}` : ''}`,
    successStatus: route.successStatus,
    ...(route.responseContentType ? { responseContentType: route.responseContentType } : {}),
  };
}

/** The input of `procedure` from a REST path below the base path (e.g. a report's retrieval_path), or null when it is not that route. */
export function inputFromRestPath(procedure: string, restPath: string): Record<string, string> | null {
  const route = REST_ROUTES[procedure];
  if (!route) return null;
  const url = new URL(restPath, 'http://base.invalid');
  const names: string[] = [];
  const pattern = new RegExp(`^${route.path.replace(/\{(\w+)\}/g, (_m, name: string) => (names.push(name), '([^/]+)'))}$`);
  const match = pattern.exec(url.pathname);
  if (!match) return null;
  const input: Record<string, string> = Object.fromEntries(names.map((name, i) => [name, decodeURIComponent(match[i + 1])]));
  url.searchParams.forEach((value, name) => (input[name] = value));
  return input;
}
