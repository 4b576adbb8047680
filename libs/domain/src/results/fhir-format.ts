import { PartnerError } from '../http/errors';

/**
 * FHIR's content negotiation for the FHIR view (R4 http.html#mime-type): the view is JSON only, so
 * a request whose `_format` (which overrides `Accept`) or `Accept` allows no JSON form is 406
 * rather than answered in a format it did not ask for. Ranges and q-values only: no library is
 * needed for reading one header this way.
 */
const JSON_FORMS = new Set(['*/*', 'application/*', 'application/json', 'application/fhir+json', 'application/json+fhir']);

/** True when a media-range list (an Accept header's syntax) allows a JSON answer of FHIR R4. */
function allowsFhirJson(ranges: string): boolean {
  return ranges.split(',').some((range) => {
    const [type, ...params] = range.split(';').map((part) => part.trim());
    // An unescaped `+` in a query string arrives as a space (`application/fhir json`).
    if (!JSON_FORMS.has(type.toLowerCase().replace(/ /g, '+'))) return false;
    const param = (name: string) => params.find((p) => p.toLowerCase().startsWith(`${name}=`))?.slice(name.length + 1).replace(/"/g, '');
    const q = param('q');
    const version = param('fhirversion');
    return (q === undefined || Number(q) > 0) && (version === undefined || version === '4.0' || version.startsWith('4.0.'));
  });
}

/** Throws 406 `not_acceptable` unless the request allows FHIR JSON; `_format=json` is FHIR's short form. */
export function requireFhirJson(format: string | undefined, accept: string | undefined): void {
  if (format !== undefined) {
    if (format === 'json' || allowsFhirJson(format)) return;
    // The value is not repeated: a sentence is logged, and a query value is the partner's text.
    throw new PartnerError('not_acceptable', 'This _format is not available: this view answers FHIR JSON only (_format=json or application/fhir+json).');
  }
  if (accept === undefined || accept.trim() === '' || allowsFhirJson(accept)) return;
  throw new PartnerError('not_acceptable', 'The Accept header allows no JSON: this view answers application/fhir+json (or application/json) only.');
}
