import type { ResultRecordBody } from '../laboratory-operations/laboratory-operations.schemas';

/**
 * Synthetic result content for sandbox scenarios, shaped the way a laboratory information system
 * sends it: every value as the text the laboratory printed (trailing zeros such as "2.310", leading
 * zeros such as "092", qualifiers such as ">100.000"), units, reference intervals and abnormal
 * flags. Text only, like any result the laboratory boundary accepts (observation-text.ts): a JSON
 * number would be refused. Nothing here is a real patient's result.
 */

/** Which version of the result a scenario step records. */
export const SYNTHETIC_RESULT_KINDS = ['partial', 'final', 'corrected', 'critical'] as const;
export type SyntheticResultKind = (typeof SYNTHETIC_RESULT_KINDS)[number];

type Observation = Record<string, string | null>;

interface Panel {
  observations: Observation[];
  /** How many leading observations a partial release carries. */
  partialCount: number;
  /** The observation a correction changes, and its corrected fields. */
  correction: { code: string; fields: Observation; previously: string };
  /** The observation a critical result replaces, and its critical fields. */
  critical: { code: string; fields: Observation };
}

const obs = (code: string, analyte: string, value: string, unit: string, reference_interval: string, abnormal_flag: string | null = null): Observation => ({
  code,
  analyte,
  value,
  unit,
  reference_interval,
  abnormal_flag,
  result_status: 'final',
});

const PANELS: Record<string, Panel> = {
  CBC: {
    observations: [
      obs('WBC', 'White Blood Cell Count', '6.4', 'x10^3/uL', '3.4-10.8'),
      obs('RBC', 'Red Blood Cell Count', '4.71', 'x10^6/uL', '4.14-5.80'),
      obs('HGB', 'Hemoglobin', '14.2', 'g/dL', '13.0-17.7'),
      obs('HCT', 'Hematocrit', '42.5', '%', '37.5-51.0'),
      obs('PLT', 'Platelet Count', '251', 'x10^3/uL', '150-450'),
    ],
    partialCount: 3,
    correction: { code: 'HGB', fields: { value: '12.6', abnormal_flag: 'L' }, previously: '14.2 g/dL' },
    critical: { code: 'HGB', fields: { value: '6.1', abnormal_flag: 'LL' } },
  },
  LIPID: {
    observations: [
      obs('CHOL', 'Cholesterol, Total', '212', 'mg/dL', '100-199', 'H'),
      obs('TRIG', 'Triglycerides', '148', 'mg/dL', '0-149'),
      obs('HDL', 'HDL Cholesterol', '52', 'mg/dL', '>39'),
      obs('LDL', 'LDL Cholesterol, Calculated', '131', 'mg/dL', '0-99', 'H'),
    ],
    partialCount: 2,
    correction: { code: 'LDL', fields: { value: '118', abnormal_flag: 'H' }, previously: '131 mg/dL' },
    critical: { code: 'TRIG', fields: { value: '1180', abnormal_flag: 'HH' } },
  },
  HBA1C: {
    observations: [obs('A1C', 'Hemoglobin A1c', '5.4', '%', '4.8-5.6'), obs('EAG', 'Estimated Average Glucose', '108', 'mg/dL', 'Not established')],
    partialCount: 1,
    correction: { code: 'A1C', fields: { value: '5.9', abnormal_flag: 'H' }, previously: '5.4 %' },
    critical: { code: 'A1C', fields: { value: '14.3', abnormal_flag: 'HH' } },
  },
  TSH: {
    observations: [obs('TSH', 'Thyroid Stimulating Hormone', '2.310', 'uIU/mL', '0.450-4.500')],
    partialCount: 1,
    correction: { code: 'TSH', fields: { value: '4.870', abnormal_flag: 'H' }, previously: '2.310 uIU/mL' },
    critical: { code: 'TSH', fields: { value: '>100.000', abnormal_flag: 'HH' } },
  },
  // Any other test: a basic metabolic panel, whose critical value is a potassium.
  DEFAULT: {
    observations: [
      obs('NA', 'Sodium', '139', 'mmol/L', '134-144'),
      obs('K', 'Potassium', '4.3', 'mmol/L', '3.5-5.2'),
      obs('CL', 'Chloride', '101', 'mmol/L', '96-106'),
      obs('CO2', 'Carbon Dioxide, Total', '24', 'mmol/L', '20-29'),
      obs('GLU', 'Glucose', '092', 'mg/dL', '70-99'),
      obs('CREAT', 'Creatinine', '0.91', 'mg/dL', '0.76-1.27'),
    ],
    partialCount: 3,
    correction: { code: 'CREAT', fields: { value: '1.38', abnormal_flag: 'H' }, previously: '0.91 mg/dL' },
    critical: { code: 'K', fields: { value: '6.9', abnormal_flag: 'HH' } },
  },
};

function panelFor(itemCode: string): Panel {
  return PANELS[itemCode.toUpperCase()] ?? PANELS.DEFAULT;
}

/** The observations of one synthetic result version for a test. */
export function syntheticObservations(itemCode: string, kind: SyntheticResultKind): Observation[] {
  const panel = panelFor(itemCode);
  const all = panel.observations.map((o) => ({ ...o }));
  switch (kind) {
    // A partial release carries the first analytes as preliminary (HL7 OBX-11 P): the final
    // version releases them again, as final, with the rest. Rows marked final in a version whose
    // state is partial would say two different things.
    case 'partial':
      return all.slice(0, panel.partialCount).map((o) => ({ ...o, result_status: 'preliminary' }));
    case 'final':
      return all;
    case 'corrected':
      return all.map((o) =>
        o.code === panel.correction.code ? { ...o, ...panel.correction.fields, result_status: 'corrected', comment: `Corrected result; previously reported as ${panel.correction.previously}.` } : o,
      );
    case 'critical':
      return all.map((o) =>
        o.code === panel.critical.code ? { ...o, ...panel.critical.fields, comment: 'Critical value; called to the ordering provider and read back.' } : o,
      );
  }
}

/** Text safe inside a PDF string literal: ASCII only, with its delimiters escaped. */
function pdfText(text: string): string {
  return text.replace(/[^\x20-\x7e]/g, '?').replace(/[\\()]/g, (c) => `\\${c}`);
}

/**
 * A small, valid one-page PDF (PDF 1.4, Helvetica, no external resources) carrying `lines`.
 * Offsets in the cross-reference table are computed, so readers open it without repair.
 */
export function syntheticPdf(title: string, lines: string[]): Buffer {
  const content = ['BT', '/F1 10 Tf', '14 TL', '56 760 Td', ...lines.map((line) => `(${pdfText(line)}) Tj T*`), 'ET'].join('\n');
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>',
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
    `<< /Length ${Buffer.byteLength(content, 'latin1')} >>\nstream\n${content}\nendstream`,
    `<< /Title (${pdfText(title)}) /Producer (Laboratory Ordering Partner Service sandbox) >>`,
  ];
  let body = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((object, i) => {
    offsets.push(Buffer.byteLength(body, 'latin1'));
    body += `${i + 1} 0 obj\n${object}\nendobj\n`;
  });
  const xref = Buffer.byteLength(body, 'latin1');
  body += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`;
  body += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R /Info ${objects.length} 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(body, 'latin1');
}

export interface SyntheticResultContext {
  itemCode: string;
  itemName: string;
  externalOrderId: string;
  /** Distinguishes the versions of one order's result, e.g. 1, 2. */
  sequence: number;
  orderId: string;
}

/** A complete result as a laboratory would record it, optionally with its PDF report. */
export function syntheticResult(context: SyntheticResultContext, kind: SyntheticResultKind, withReport: boolean): ResultRecordBody {
  const observations = syntheticObservations(context.itemCode, kind);
  const result: ResultRecordBody = {
    source_result_id: `SBX-${context.orderId.slice(0, 8).toUpperCase()}-${context.sequence}`,
    performing_laboratory_system: 'Sandbox laboratory simulator',
    observations,
    is_critical: kind === 'critical',
  };
  if (withReport) {
    const pdf = syntheticPdf(`Synthetic report ${context.externalOrderId}`, [
      'SYNTHETIC SANDBOX REPORT - NOT A REAL PATIENT - NOT FOR CLINICAL USE',
      '',
      `Order: ${context.externalOrderId}`,
      `Test: ${context.itemName} (${context.itemCode})`,
      `Result: ${kind}`,
      '',
      ...observations.map((o) => `${o.analyte}: ${o.value} ${o.unit}  (reference ${o.reference_interval})${o.abnormal_flag ? `  flag ${o.abnormal_flag}` : ''}`),
    ]);
    result.report = { content_type: 'application/pdf', content_base64: pdf.toString('base64') };
  }
  return result;
}
