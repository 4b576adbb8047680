import { OPENAPI_PATH, PARTNER_BASE_PATH } from '@lop/contract';
import type { NextFunction, Request, Response } from 'express';
import { Histogram, type Registry } from 'prom-client';
import { getPathRegExp, normalizePath, forEachOpenApiProcedure } from 'trpc-to-openapi';
import { partnerRouter, type ProcedureMeta } from '@lop/domain';
import { routingMethod } from './partner-routes';

/**
 * Request duration by route and status (Prometheus). The route label is the partner route's
 * template (`/v1/orders/{orderId}`), never the raw path, so ids cannot explode the label set.
 */
export function requestMetrics(registry: Registry) {
  const duration = new Histogram({
    name: 'partner_http_request_duration_seconds',
    help: 'Time from receiving a request to finishing its response, by method, route template and status.',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const routes: { method: string; pattern: RegExp; template: string }[] = [];
  forEachOpenApiProcedure(partnerRouter._def.procedures, ({ meta }) => {
    const { method, path } = (meta as ProcedureMeta).openapi!;
    routes.push({ method, pattern: getPathRegExp(normalizePath(path)), template: path });
  });
  const routeOf = (req: Request): string => {
    // originalUrl: mounted routers strip their prefix from req.url while they handle the request.
    const path = req.originalUrl.split('?')[0];
    if (path.startsWith(`${PARTNER_BASE_PATH}/`)) {
      const below = normalizePath(path.slice(PARTNER_BASE_PATH.length));
      const method = routingMethod(req.method);
      return routes.find((r) => r.method === method && r.pattern.test(below))?.template ?? 'unmatched';
    }
    if (path === '/livez' || path === '/readyz' || path === OPENAPI_PATH) return path;
    if (path.startsWith('/api/trpc/')) return '/api/trpc';
    if (path.startsWith('/console')) return '/console';
    if (path.startsWith('/docs') || path.startsWith('/api/public/')) return 'documents';
    return 'unmatched';
  };
  return (req: Request, res: Response, next: NextFunction): void => {
    const start = process.hrtime.bigint();
    res.once('finish', () => {
      duration.observe({ method: req.method, route: routeOf(req), status: String(res.statusCode) }, Number(process.hrtime.bigint() - start) / 1e9);
    });
    next();
  };
}
