import type { EntityManager } from '@mikro-orm/postgresql';
import { trainedFrom } from '../models/model.store.ts';

/** A YOLO generation and size (n, s, m, l, x) as a model YAML or weights name spells it: yolo11n.yaml, yolov8s-seg.pt, yolo26n. */
export interface ModelFamily {
  family: 'yolov8' | 'yolo11' | 'yolo26';
  size: string | null;
}

const FAMILY = /(?:^|[^a-z0-9])(yolov8|yolo11|yolo26)([nsmlx])?(?![a-z0-9])/i;
/** How far a chain of fine-tunes (ul:// weights of a model that was itself fine-tuned) is followed. */
const MAX_HOPS = 4;

export function familyOf(name: string): ModelFamily | undefined {
  const match = FAMILY.exec(name);
  if (!match) return undefined;
  return { family: match[1]!.toLowerCase() as ModelFamily['family'], size: match[2]?.toLowerCase() ?? null };
}

/**
 * The architecture a model was trained from: its training's model YAML, followed through the models whose weights it
 * was fine-tuned from (ul://owner/project/model), else its own name. Undefined when nothing names one (uploaded
 * weights under another name): the exporter then decides.
 */
export async function modelFamily(
  em: EntityManager,
  model: { trainArgs?: Record<string, unknown> | null; name: string; slug: string },
): Promise<ModelFamily | undefined> {
  let source = typeof model.trainArgs?.model === 'string' ? model.trainArgs.model : undefined;
  for (let hop = 0; source?.startsWith('ul://') && hop < MAX_HOPS; hop += 1) {
    const [owner, project, slug] = source.slice('ul://'.length).split('/');
    const parent = await trainedFrom(em, owner ?? '', project ?? '', slug ?? '');
    source = parent?.model ?? parent?.name;
  }
  return (
    (source && !source.startsWith('ul://') ? familyOf(source) : undefined) ??
    familyOf(model.name) ??
    familyOf(model.slug)
  );
}
