import { randomInt } from 'node:crypto';

const ADJECTIVES = [
  'amber',
  'bold',
  'brisk',
  'calm',
  'clever',
  'crisp',
  'eager',
  'fast',
  'gentle',
  'keen',
  'lucky',
  'mellow',
  'nimble',
  'quiet',
  'rapid',
  'sharp',
  'steady',
  'sunny',
  'swift',
  'vivid',
];
const NOUNS = [
  'badger',
  'comet',
  'falcon',
  'fox',
  'harbor',
  'heron',
  'lynx',
  'maple',
  'meteor',
  'otter',
  'panda',
  'pine',
  'raven',
  'river',
  'robin',
  'summit',
  'tiger',
  'walrus',
  'willow',
  'zebra',
];

/** A URL name for a model created without one: `swift-otter-42`. */
export function readableSlug(): string {
  return `${ADJECTIVES[randomInt(ADJECTIVES.length)]}-${NOUNS[randomInt(NOUNS.length)]}-${randomInt(10, 100)}`;
}
