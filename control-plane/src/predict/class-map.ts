import { classKey } from '../datasets/class-names.ts';
import { HttpError, Invalid } from '../http/errors.ts';

/** Model class names shown in a 422 before they are cut short. */
const NAMES_SHOWN = 20;

const listed = (names: string[]) =>
  names
    .slice(0, NAMES_SHOWN)
    .map((name) => `"${name}"`)
    .join(', ') + (names.length > NAMES_SHOWN ? `, and ${names.length - NAMES_SHOWN} more` : '');

/**
 * The dataset class index for each model class (null: its predictions are dropped). With classMapping: one entry per
 * model class, in order, each a dataset class index or null; a wrong length or an index out of range is 400. Without:
 * each model class matches the dataset class of the same name, case ignored beyond 2 characters (the rule ingest and
 * adopt use); a model class with no such dataset class is a class mismatch (422 naming them, with unmatchedClasses),
 * so no prediction is silently dropped: pass a classMapping with null for the classes to leave out.
 */
export function resolveClassMap(
  datasetClasses: string[],
  modelClasses: string[],
  classMapping: Array<number | null> | null | undefined,
): Array<number | null> {
  if (classMapping) {
    if (classMapping.length !== modelClasses.length) {
      throw Invalid(
        `classMapping: has ${classMapping.length} entries; the model has ${modelClasses.length} classes (${listed(modelClasses)}), one entry each, in order`,
      );
    }
    classMapping.forEach((to, index) => {
      if (to !== null && to >= datasetClasses.length) {
        throw Invalid(
          `classMapping[${index}]: ${to} is out of range; the dataset has ${datasetClasses.length} class${datasetClasses.length === 1 ? '' : 'es'}`,
        );
      }
    });
    return classMapping;
  }
  const byKey = new Map(datasetClasses.map((name, index) => [classKey(name), index]));
  const map = modelClasses.map((name) => byKey.get(classKey(name)) ?? null);
  const unmatched = modelClasses.filter((_, index) => map[index] === null);
  if (unmatched.length > 0) {
    throw new HttpError(
      422,
      `Class mismatch: the model's classes ${listed(unmatched)} have no dataset class of the same name (the dataset has ${datasetClasses.length ? listed(datasetClasses) : 'no classes'}); pass classMapping (a dataset class index, or null to drop, per model class in order)`,
      { unmatchedClasses: unmatched },
    );
  }
  return map;
}
