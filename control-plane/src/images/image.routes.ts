import { DatasetPath } from '../datasets/dataset.schemas.ts';
import { defineRoute } from '../http/define-route.ts';
import {
  BulkDeleteBody,
  BulkDeleted,
  BulkMoveBody,
  BulkMoveConflict,
  BulkMoved,
  ImageDeleted,
  ImageDetail,
  ImageList,
  ImageListQuery,
  ImagePatch,
  ImagePatched,
  ImagePath,
  ImageUrlsBody,
  ImageUrlsResult,
  SelectedImagesBody,
} from './image.schemas.ts';

export const listImages = defineRoute({
  method: 'GET',
  path: '/api/datasets/:owner/:dataset/images',
  tag: 'Images',
  summary: 'List, filter, search and sort the images of a dataset',
  description:
    'Pages by offset (hasMore) or by cursor: pass nextCursor, the last image ID of the previous page, to continue in the same sort; ' +
    'cursor pages never repeat or skip an image while images are added. With q the order is relevance, paged by offset. ' +
    'Public datasets can be listed anonymously.',
  auth: 'optional',
  limit: 'default',
  request: { params: DatasetPath, query: ImageListQuery },
  response: { status: 200, description: 'A page of images', schema: ImageList },
  errors: [404],
  handler: (ctx, { params, query }) =>
    ctx.state.services.images.list(ctx.state.actor, params.owner, params.dataset, query),
});

export const selectedImages = defineRoute({
  method: 'POST',
  path: '/api/datasets/:owner/:dataset/images',
  tag: 'Images',
  summary: 'The list response for up to 1,000 given image IDs',
  description:
    'Takes the list filters and URL options as query parameters; IDs of other datasets are simply not returned.',
  auth: 'optional',
  limit: 'hydrate',
  request: { params: DatasetPath, query: ImageListQuery, body: SelectedImagesBody },
  response: { status: 200, description: 'The images', schema: ImageList },
  errors: [404],
  handler: (ctx, { params, query, body }) =>
    ctx.state.services.images.list(ctx.state.actor, params.owner, params.dataset, query, [...new Set(body.imageIds)]),
});

export const readImage = defineRoute({
  method: 'GET',
  path: '/api/images/:imageId',
  tag: 'Images',
  summary: 'One image: metadata, properties, labels and class names, with signed URLs',
  auth: 'optional',
  limit: 'default',
  request: { params: ImagePath },
  response: { status: 200, description: 'The image', schema: ImageDetail },
  errors: [404],
  handler: (ctx, { params }) => ctx.state.services.images.read(ctx.state.actor, params.imageId),
});

export const updateImage = defineRoute({
  method: 'PATCH',
  path: '/api/images/:imageId',
  tag: 'Images',
  summary: 'Replace the labels or the custom metadata of an image (one of them per request)',
  description:
    'Labels are checked against the dataset task and classes; the first problem is 400 naming the label index and the rule. ' +
    'Coordinates are saved rounded to 5 decimals; at most 10,000 labels.',
  auth: 'key',
  limit: 'default',
  request: { params: ImagePath, body: ImagePatch },
  documentBody: true,
  response: { status: 200, description: 'Saved', schema: ImagePatched },
  errors: [403, 404],
  handler: (ctx, { params, body }) => ctx.state.services.images.update(ctx.state.actor, params.imageId, body),
});

export const deleteImage = defineRoute({
  method: 'DELETE',
  path: '/api/images/:imageId',
  tag: 'Images',
  summary: 'Delete an image and its labels permanently',
  auth: 'key',
  limit: 'default',
  request: { params: ImagePath },
  response: { status: 200, description: 'Deleted', schema: ImageDeleted },
  errors: [403, 404],
  handler: (ctx, { params }) => ctx.state.services.images.remove(ctx.state.actor, params.imageId),
});

export const moveImages = defineRoute({
  method: 'PATCH',
  path: '/api/images/bulk',
  tag: 'Images',
  summary: 'Move up to 1,000 images of one dataset to a split',
  description:
    'An image whose file (same hash) is already in the target split is a conflict: 409 (with conflictCount) until conflictPolicy ' +
    'is skip (leave it), keep_both (move it anyway) or replace (delete the copy already there). Images already in the split are left alone.',
  auth: 'key',
  limit: 'default',
  request: { body: BulkMoveBody },
  response: { status: 200, description: 'Moved', schema: BulkMoved },
  errors: [403, 404],
  errorBodies: { 409: BulkMoveConflict },
  handler: (ctx, { body }) => ctx.state.services.images.bulkMove(ctx.state.actor, body),
});

export const deleteImages = defineRoute({
  method: 'DELETE',
  path: '/api/images/bulk',
  tag: 'Images',
  summary: 'Delete up to 1,000 images of one dataset permanently',
  auth: 'key',
  limit: 'default',
  request: { body: BulkDeleteBody },
  response: { status: 200, description: 'Deleted', schema: BulkDeleted },
  errors: [403, 404],
  handler: (ctx, { body }) => ctx.state.services.images.bulkDelete(ctx.state.actor, body.imageIds),
});

export const imageUrls = defineRoute({
  method: 'POST',
  path: '/api/images/urls',
  tag: 'Images',
  summary: 'Signed image and thumbnail URLs for up to 100 images of one dataset',
  auth: 'optional',
  limit: 'default',
  request: { body: ImageUrlsBody },
  response: { status: 200, description: 'URLs keyed by image ID', schema: ImageUrlsResult },
  errors: [404],
  handler: (ctx, { body }) => ctx.state.services.images.signedUrls(ctx.state.actor, body.imageIds),
});

// The bulk routes come before /api/images/:imageId, whose pattern would otherwise take "bulk" as an ID.
export const imageRoutes = [
  listImages,
  selectedImages,
  moveImages,
  deleteImages,
  imageUrls,
  readImage,
  updateImage,
  deleteImage,
];
