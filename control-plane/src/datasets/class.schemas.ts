import { z } from 'zod';
import { int } from '../validation/integers.ts';

/** A class index: a position in the dataset's class names. */
export const ClassId = int().min(0);

/** Source class name → class index, class name (existing or new) or null to drop its labels: ingest and adopt. */
export const ClassMapping = z.record(
  z.string().min(1).max(256),
  z.union([ClassId, z.string().min(1).max(256), z.null()]),
);

export const ClassMergeBody = z.object({
  sourceClassIds: z.array(ClassId).min(1).max(25_000),
  targetClassId: ClassId,
});
export const ClassDeleteBody = z.object({ classIds: z.array(ClassId).min(1).max(25_000) });

const ClassListAfter = {
  success: z.literal(true),
  classNames: z.array(z.string()).meta({ description: 'The class list after the change; IDs are positions in it' }),
  classColors: z
    .record(z.string(), z.string())
    .meta({ description: 'Class index → hex colour, for every class after the change' }),
};
const Merged = {
  mergedClassIds: z.array(z.number().int()),
  targetClassId: z.number().int().meta({ description: "The target's ID after the sources were removed" }),
};
const Deleted = { deletedClassIds: z.array(z.number().int()), deletedAnnotations: z.number().int() };
/** The summary's fields are also at the top level, where the hosted service's client reads them. */
export const ClassesMerged = z.object({
  ...ClassListAfter,
  ...Merged,
  summary: z.object(Merged),
});
export const ClassesDeleted = z.object({
  ...ClassListAfter,
  ...Deleted,
  summary: z.object(Deleted),
});
