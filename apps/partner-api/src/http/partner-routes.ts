import type { AnyProcedure } from '@trpc/server';
import { ZodArray } from 'zod';
import {
  acceptsRequestBody,
  coerceSchema,
  forEachOpenApiProcedure,
  getInputOutputParsers,
  getPathRegExp,
  instanceofZodTypeLikeVoid,
  instanceofZodTypeObject,
  instanceofZodTypeOptional,
  normalizePath,
  unwrapZodType,
  zodSupportsCoerce,
  type OpenApiMethod,
} from 'trpc-to-openapi';
import { PartnerError, partnerRouter, type ProcedureMeta } from '@lop/domain';
import { invalidEncoding, undecodable } from './url-encoding';

/**
 * One partner route: a procedure with OpenAPI meta, read from the router once at start-up. Adding
 * a procedure with meta is all it takes to add a route; nothing here names one.
 */
export interface PartnerRoute {
  method: OpenApiMethod;
  /** As the OpenAPI document spells it, e.g. `/v1/orders/{orderId}`. */
  template: string;
  /** trpc-to-openapi's own pattern for the template (case-insensitive, one segment per parameter). */
  pattern: RegExp;
  /** The procedure's path in the router, e.g. `orders.get`. */
  procedurePath: string;
  procedure: AnyProcedure;
  type: 'query' | 'mutation';
  pathParams: string[];
  /** Reads a JSON body (and so takes no query string). */
  acceptsBody: boolean;
}

export function partnerRoutes(): PartnerRoute[] {
  const routes: PartnerRoute[] = [];
  forEachOpenApiProcedure(partnerRouter._def.procedures, ({ path, procedure, type, meta }) => {
    if (type === 'subscription') return;
    const { method, path: template } = (meta as ProcedureMeta).openapi!;
    routes.push({
      method,
      template,
      pattern: getPathRegExp(normalizePath(template)),
      procedurePath: path,
      procedure: procedure as unknown as AnyProcedure,
      type,
      pathParams: [...template.matchAll(/\{(.+?)\}/g)].map((m) => m[1]),
      acceptsBody: acceptsRequestBody(method),
    });
  });
  return routes;
}

/** HEAD is answered wherever GET is, as GET without the body (RFC 9110 §9.1): it is routed as GET. */
export const routingMethod = (method: string): string => (method === 'HEAD' ? 'GET' : method);

/**
 * The methods a path (below the base path, normalized) answers, for the Allow header of a 405
 * (RFC 9110 §15.5.6): its routes' methods, HEAD with GET; empty when no route has the path.
 */
export function methodsAnswering(routes: readonly PartnerRoute[]): (path: string) => string[] {
  return (path) => {
    const methods = new Set<string>(routes.filter((route) => route.pattern.test(path)).map((route) => route.method));
    if (methods.has('GET')) methods.add('HEAD');
    return [...methods];
  };
}

/** The 405 for a route that exists but does not answer `method`. */
export function methodNotAllowed(method: string, allowed: readonly string[]): PartnerError {
  const allow = allowed.join(', ');
  return new PartnerError('method_not_allowed', `This route does not answer ${method}; it answers ${allow}.`, { headers: { Allow: allow } });
}

export interface InputShape {
  /** z.void() and the like: the procedure gets no input at all. */
  likeVoid: boolean;
  /** An object schema: query values are coerced to its types, and array-typed keys always get arrays. */
  coercible: boolean;
  arrayKeys: string[];
}

const inputShapes = new WeakMap<AnyProcedure, InputShape>();

/**
 * What trpc-to-openapi works out from a procedure's input schema (and the coercion it switches on
 * in that schema, once), cached per procedure: the dispatcher assembles input exactly as the
 * library does.
 */
export function inputShapeOf(procedure: AnyProcedure): InputShape {
  let shape = inputShapes.get(procedure);
  if (shape) return shape;
  const { inputParser } = getInputOutputParsers(procedure as Parameters<typeof getInputOutputParsers>[0]);
  const schema = unwrapZodType(inputParser, true);
  const coercible = zodSupportsCoerce && instanceofZodTypeObject(schema);
  const arrayKeys: string[] = [];
  if (coercible) {
    for (const [key, field] of Object.entries((schema as unknown as { shape: Record<string, unknown> }).shape)) {
      if (field instanceof ZodArray || (instanceofZodTypeOptional(field as never) && (field as { unwrap(): unknown }).unwrap() instanceof ZodArray)) arrayKeys.push(key);
    }
    coerceSchema(schema as never);
  }
  shape = { likeVoid: instanceofZodTypeLikeVoid(schema), coercible, arrayKeys };
  inputShapes.set(procedure, shape);
  return shape;
}

/**
 * trpc-to-openapi hands path parameters to the procedure still percent-encoded (`a%20b`); a partner
 * encodes an identifier like any URL segment, so the procedure must see it decoded, once.
 * Text that is not valid percent-encoding is passed on as sent; escapes that are not UTF-8 are refused.
 */
export function decodePathParams(input: unknown, names: readonly string[]): unknown {
  if (names.length === 0 || !input || typeof input !== 'object') return input;
  const decoded: Record<string, unknown> = { ...(input as Record<string, unknown>) };
  for (const name of names) {
    const value = decoded[name];
    if (typeof value !== 'string') continue;
    if (undecodable(value)) throw invalidEncoding([name]);
    try {
      decoded[name] = decodeURIComponent(value);
    } catch {
      // Left as sent; the procedure's schema judges it.
    }
  }
  return decoded;
}

/**
 * Query strings trpc-to-openapi would misread, refused first: on a route that reads a JSON body it
 * ignores the query string, so a stray parameter would pass unnoticed; and it drops a parameter sent
 * empty (`?cursor=`), which would silently mean "absent" (an empty cursor would restart the event
 * stream from its first event instead of failing).
 */
export function queryRefusal(search: string, acceptsBody: boolean): PartnerError | null {
  if (search === '' || search === '?') return null;
  const params = new URLSearchParams(search);
  const query = [...new Set(params.keys())];
  if (query.length === 0) return null;
  if (acceptsBody) {
    const details = query.map((field) => ({ field, issue: 'unknown_field', message: 'This endpoint takes no query parameters; send fields in the JSON body.' }));
    return new PartnerError('invalid_request', 'The request is not valid; see details.', { details });
  }
  const empty = query.filter((field) => params.getAll(field).some((value) => value === ''));
  if (empty.length > 0) {
    const details = empty.map((field) => ({ field, issue: 'empty_value', message: 'Send a value or leave the parameter out.' }));
    return new PartnerError('invalid_request', 'The request is not valid; see details.', { details });
  }
  return null;
}
