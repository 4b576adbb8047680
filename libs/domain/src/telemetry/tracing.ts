import {
  context,
  defaultTextMapGetter,
  defaultTextMapSetter,
  isSpanContextValid,
  ROOT_CONTEXT,
  SpanStatusCode,
  trace,
  type Context,
  type Span,
  type SpanOptions,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';

/**
 * Spans around our own work and the trace context the webhook outbox carries. Only the
 * OpenTelemetry API here: without a started SDK (telemetry off, most tests, the admin CLI) every
 * call is a no-op that costs next to nothing (see telemetry.ts for the SDK).
 *
 * Attributes never hold personal data, secrets, bodies or headers: ids, counts, outcomes and
 * status codes only.
 */
const tracer = trace.getTracer('@lop/domain');

/**
 * The outbox's own propagator, not the process's global one: OTEL_PROPAGATORS decides what is
 * read from incoming requests (an operator may turn that off at the edge), never whether a
 * delivery joins the trace of the request that caused it.
 */
const w3c = new W3CTraceContextPropagator();

/** A code that names what failed without its message (a database message can quote what a partner sent). */
function errorTypeOf(error: unknown): string {
  if (error && typeof error === 'object') {
    const { errorCode, code, name } = error as { errorCode?: unknown; code?: unknown; name?: unknown };
    if (typeof errorCode === 'string') return errorCode;
    if (typeof code === 'string') return code;
    if (typeof name === 'string') return name;
  }
  return 'error';
}

export interface WorkSpanOptions extends SpanOptions {
  /** The context the span is a child of; defaults to the active one. */
  parent?: Context;
}

/**
 * Runs `work` inside a new active span (so spans and log lines made inside belong to it), ending
 * it when `work` settles. A failure sets the span's status and `error.type`; the exception itself
 * is not recorded, since its message can quote input.
 */
export function withSpan<T>(name: string, options: WorkSpanOptions, work: (span: Span) => Promise<T>): Promise<T> {
  const { parent, ...spanOptions } = options;
  return tracer.startActiveSpan(name, spanOptions, parent ?? context.active(), async (span) => {
    try {
      return await work(span);
    } catch (error) {
      span.setAttribute('error.type', errorTypeOf(error));
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw error;
    } finally {
      span.end();
    }
  });
}

/** The W3C traceparent of the active span, for the outbox to carry; null when nothing is being traced. */
export function activeTraceparent(): string | null {
  const carrier: Record<string, string> = {};
  w3c.inject(context.active(), carrier, defaultTextMapSetter);
  return carrier.traceparent ?? null;
}

/** The context a stored traceparent names (its span as a remote parent), or undefined when there is none or it does not parse. */
export function traceparentContext(traceparent: string | null | undefined): Context | undefined {
  if (!traceparent) return undefined;
  const extracted = w3c.extract(ROOT_CONTEXT, { traceparent }, defaultTextMapGetter);
  return trace.getSpanContext(extracted) ? extracted : undefined;
}

/**
 * pino `mixin`: the active span's ids on every log line written inside it, so a log line leads to
 * its trace and back. Nothing when no span is active (telemetry off: never). A fresh object each
 * call: pino merges the line's own fields into what the mixin returns.
 */
export function traceLogFields(): Record<string, string> {
  const spanContext = trace.getSpan(context.active())?.spanContext();
  if (!spanContext || !isSpanContextValid(spanContext)) return {};
  return { trace_id: spanContext.traceId, span_id: spanContext.spanId, trace_flags: spanContext.traceFlags.toString(16).padStart(2, '0') };
}
