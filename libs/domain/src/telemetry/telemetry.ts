import type { IncomingMessage } from 'node:http';
import { createRequire } from 'node:module';
import { diag, DiagLogLevel, type Attributes } from '@opentelemetry/api';
import type { NodeSDKConfiguration } from '@opentelemetry/sdk-node';
import { ConfigError } from '../config/config';

/**
 * OpenTelemetry traces for a process (partner API, delivery worker, `npm start`): off unless the
 * standard OTEL_* variables ask for it, and then exported with the SDK's own exporters (OTLP by
 * default). Traces only: metrics stay on the Prometheus endpoints, so the SDK's metric and log
 * pipelines are not started. When off, none of the SDK is even loaded.
 */

const TRACE_EXPORTERS = new Set(['otlp', 'console', 'zipkin', 'none']);
const OTLP_PROTOCOLS = new Set(['grpc', 'http/protobuf', 'http/json']);

const listOf = (value: string | undefined) =>
  (value ?? '')
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean);

/**
 * Whether this process traces. On when OTEL_TRACES_EXPORTER names an exporter, or an OTLP endpoint
 * is set (OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, the exporter then being
 * OTLP); off when OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none. A value the SDK would only
 * warn about is refused here in one line, like the rest of the configuration.
 */
export function telemetryEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  const value = (name: string) => (env[name]?.trim() ? env[name]!.trim() : undefined);
  const exporters = listOf(value('OTEL_TRACES_EXPORTER'));
  const unknown = exporters.find((e) => !TRACE_EXPORTERS.has(e));
  if (unknown) throw new ConfigError(`invalid configuration: OTEL_TRACES_EXPORTER: unknown exporter "${unknown}" (otlp, console, zipkin or none)`);
  for (const name of ['OTEL_EXPORTER_OTLP_PROTOCOL', 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL']) {
    const protocol = value(name);
    if (protocol && !OTLP_PROTOCOLS.has(protocol)) throw new ConfigError(`invalid configuration: ${name}: must be grpc, http/protobuf or http/json`);
  }
  for (const name of ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']) {
    const endpoint = value(name);
    // `collector:4318` parses as a URL of scheme "collector:": ask for the scheme explicitly.
    if (endpoint && !(/^https?:\/\//i.test(endpoint) && URL.canParse(endpoint))) throw new ConfigError(`invalid configuration: ${name}: must be an http:// or https:// URL, e.g. http://127.0.0.1:4318`);
  }
  const disabled = value('OTEL_SDK_DISABLED');
  if (disabled && !['true', 'false'].includes(disabled.toLowerCase())) throw new ConfigError('invalid configuration: OTEL_SDK_DISABLED: must be true or false');
  if (disabled?.toLowerCase() === 'true') return false;
  if (exporters.length === 1 && exporters[0] === 'none') return false;
  return exporters.length > 0 || value('OTEL_EXPORTER_OTLP_ENDPOINT') !== undefined || value('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT') !== undefined;
}

/** Orchestrator probes and Prometheus scrapes: a span every few seconds that says nothing. */
const UNTRACED_PATHS = new Set(['/livez', '/readyz', '/metrics']);

/**
 * Set over what the HTTP instrumentation records on a server span (an undefined attribute is not
 * kept). Like the access log: never the query string; and no client address either (a browser's
 * address on the console door is personal data). Method, path, route, status and user agent stay.
 */
const DROPPED_SERVER_ATTRIBUTES: Attributes = { 'url.query': undefined, 'client.address': undefined, 'network.peer.address': undefined, 'network.peer.port': undefined };

/**
 * The packages the instrumentations patch. Our entry points are ES modules: by the time main()
 * starts the SDK, their imports of these CommonJS packages have already been evaluated, and
 * require-in-the-middle patches only on require(). ESM imports of CommonJS share require's cache,
 * so requiring each once after the SDK has started patches the very objects those imports hold
 * (in place: prototypes, before any app, server or pool exists). This needs no ESM loader hook
 * (import-in-the-middle) and works the same from source and from the esbuild bundles, where npm
 * packages stay external.
 */
const INSTRUMENTED_PACKAGES = ['http', 'express', 'pg'];

export interface TelemetryOptions {
  /** service.name, unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES names one. */
  serviceName: string;
  /** Where the SDK's own warnings go (e.g. a collector that cannot be reached); silent unless OTEL_LOG_LEVEL says otherwise. */
  warn?: (message: string) => void;
  /** Tests: span processors instead of the exporter the environment names (telemetry is then on). */
  spanProcessors?: NodeSDKConfiguration['spanProcessors'];
}

export interface Telemetry {
  /** Exports what is still buffered and stops; bounded, so a missing collector never holds up a shutdown. */
  shutdown(): Promise<void>;
}

/** How long shutdown waits for the last spans to be exported. */
const SHUTDOWN_LIMIT_MS = 5_000;

/**
 * Starts tracing when the process environment asks for it (see telemetryEnabled; the SDK reads the
 * other OTEL_* variables itself); undefined when off. Call it first in main(), before an express
 * app, HTTP server or pg pool is created.
 */
export async function startTelemetry(options: TelemetryOptions): Promise<Telemetry | undefined> {
  const env = process.env;
  if (!options.spanProcessors && !telemetryEnabled(env)) return undefined;

  const [{ NodeSDK }, { HttpInstrumentation }, { ExpressInstrumentation, ExpressLayerType }, { PgInstrumentation }] = await Promise.all([
    import('@opentelemetry/sdk-node'),
    import('@opentelemetry/instrumentation-http'),
    import('@opentelemetry/instrumentation-express'),
    import('@opentelemetry/instrumentation-pg'),
  ]);
  if (options.warn && !env.OTEL_LOG_LEVEL) {
    const warn = options.warn;
    diag.setLogger({ error: warn, warn, info: () => undefined, debug: () => undefined, verbose: () => undefined }, DiagLogLevel.WARN);
  }
  const named = Boolean(env.OTEL_SERVICE_NAME?.trim()) || /(^|,)\s*service\.name\s*=/.test(env.OTEL_RESOURCE_ATTRIBUTES ?? '');
  const sdk = new NodeSDK({
    serviceName: named ? undefined : options.serviceName,
    spanProcessors: options.spanProcessors,
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: [
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (request: IncomingMessage) => UNTRACED_PATHS.has((request.url ?? '').split('?')[0]),
        startIncomingSpanHook: () => DROPPED_SERVER_ATTRIBUTES,
        // The only outgoing requests are webhook deliveries: their span is ours (webhooks/process-delivery.ts),
        // and a partner's receiver gets the spec's headers only, not our trace context.
        disableOutgoingRequestInstrumentation: true,
      }),
      // Route handlers only (they name the server span's http.route): a span for every middleware
      // and router layer of every request is noise.
      new ExpressInstrumentation({ ignoreLayersType: [ExpressLayerType.MIDDLEWARE, ExpressLayerType.ROUTER] }),
      // pg is pg-boss's driver: its polling runs outside any request, and a span per poll would bury
      // the traces that matter. Queries are traced only inside a span of ours.
      new PgInstrumentation({ requireParentSpan: true }),
    ],
  });
  sdk.start();
  const require = createRequire(import.meta.url);
  for (const name of INSTRUMENTED_PACKAGES) require(name);

  let stopping: Promise<void> | undefined;
  return {
    shutdown: () =>
      (stopping ??= Promise.race([
        sdk.shutdown().catch((error: unknown) => options.warn?.(`telemetry shutdown failed: ${(error as Error).message}`)),
        new Promise<void>((resolve) => setTimeout(resolve, SHUTDOWN_LIMIT_MS).unref()),
      ])),
  };
}
