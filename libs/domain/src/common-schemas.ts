import { z } from 'zod';

export const uuidSchema = z.uuid();
export const timestampSchema = z.iso.datetime({ offset: true }).meta({ format: 'date-time' });

/** A uuid path parameter; a malformed value answers 404 like an unknown id. */
export const pathId = (description: string) => z.uuid().meta({ description });

/** Inputs reject unknown fields, so a typo is a clear 400 instead of silently ignored. */
export const strictInput = z.strictObject;
