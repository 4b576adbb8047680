import { describe, expect, it } from 'vitest';
import { telemetryEnabled } from './telemetry';

describe('the tracing switch (standard OTEL_* variables)', () => {
  it('is off by default, and with only unrelated OTEL_* variables', () => {
    expect(telemetryEnabled({})).toBe(false);
    expect(telemetryEnabled({ OTEL_SERVICE_NAME: 'partner-api', OTEL_EXPORTER_OTLP_ENDPOINT: '' })).toBe(false);
  });

  it('is on with an OTLP endpoint or a named trace exporter', () => {
    expect(telemetryEnabled({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe(true);
    expect(telemetryEnabled({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' })).toBe(true);
    expect(telemetryEnabled({ OTEL_TRACES_EXPORTER: 'otlp' })).toBe(true);
    expect(telemetryEnabled({ OTEL_TRACES_EXPORTER: 'console' })).toBe(true);
  });

  it('is off when the SDK is disabled or the trace exporter is none, whatever else is set', () => {
    expect(telemetryEnabled({ OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe(false);
    expect(telemetryEnabled({ OTEL_SDK_DISABLED: 'TRUE', OTEL_TRACES_EXPORTER: 'otlp' })).toBe(false);
    expect(telemetryEnabled({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe(false);
    expect(telemetryEnabled({ OTEL_SDK_DISABLED: 'false', OTEL_TRACES_EXPORTER: 'otlp' })).toBe(true);
  });

  it('refuses, in one line naming the variable, a value the SDK would only warn about', () => {
    expect(() => telemetryEnabled({ OTEL_TRACES_EXPORTER: 'jaeger' })).toThrow(/^invalid configuration: OTEL_TRACES_EXPORTER: unknown exporter "jaeger"/);
    expect(() => telemetryEnabled({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http' })).toThrow(/^invalid configuration: OTEL_EXPORTER_OTLP_PROTOCOL: must be grpc, http\/protobuf or http\/json$/);
    expect(() => telemetryEnabled({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' })).toThrow(/^invalid configuration: OTEL_EXPORTER_OTLP_ENDPOINT: must be an http:\/\/ or https:\/\/ URL/);
    expect(() => telemetryEnabled({ OTEL_SDK_DISABLED: 'yes' })).toThrow(/^invalid configuration: OTEL_SDK_DISABLED: must be true or false$/);
  });
});
