// @vp/inference/embed: the image embedder (image-embedding.ts). Importing it loads onnxruntime and sharp.
export {
  embedImages,
  openEmbedder,
  type EmbedderSession,
  type EmbeddedBatch,
  type Normalisation,
} from './image-embedding.ts';
