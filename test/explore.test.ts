// Explore search over public projects and datasets: visibility, text, task, license, author, stars, image counts,
// sorting and paging, with the model summaries of a project (names, bytes, count).
import t from 'tap';
import { call } from './helpers/server.ts';
import { createModel, createProject } from './helpers/models.ts';
import { createDataset, startWorld } from './helpers/world.ts';

interface ExploreAnswer {
  projects: Array<{
    project: string;
    owner: string;
    modelCount: number;
    modelNames: string[];
    totalBytes: number;
    starCount: number;
    license?: string;
  }>;
  datasets: Array<{
    dataset: string;
    owner: string;
    task: string;
    imageCount: number;
    starCount: number;
    license?: string;
  }>;
  images?: unknown[];
  hasMore: boolean;
}

const world = await startWorld(t);
const { server, alice, bobby } = world;
await createProject(world, alice, {
  project: 'cars',
  name: 'Cars',
  visibility: 'public',
  description: 'road vehicles',
  license: 'MIT',
});
await createProject(world, alice, { project: 'hidden', name: 'Hidden', visibility: 'private' });
await createProject(world, bobby, { project: 'birds', name: 'Birds', visibility: 'public', license: 'AGPL-3.0' });
await createProject(world, bobby, { project: 'empty', name: 'Empty', visibility: 'public' });
await createModel(world, alice, { project: 'cars', model: 'yolo-a', task: 'detect' });
await createModel(world, alice, { project: 'cars', model: 'yolo-b', task: 'segment' });
await createModel(world, bobby, { project: 'birds', model: 'beak', task: 'pose' });
await createModel(world, alice, { project: 'hidden', model: 'secret', task: 'detect' });
await createDataset(world, alice, {
  dataset: 'roads',
  name: 'Roads',
  visibility: 'public',
  task: 'detect',
  license: 'MIT',
});
await createDataset(world, bobby, { dataset: 'feathers', name: 'Feathers', visibility: 'public', task: 'classify' });
await createDataset(world, bobby, { dataset: 'private-set', name: 'Private set', visibility: 'private' });
await call(server, 'PATCH', '/api/projects/bobby/birds', { key: alice, body: { starred: true } });
await call(server, 'PATCH', '/api/datasets/bobby/feathers', { key: alice, body: { starred: true } });

const explore = async (query: string, key?: string) => {
  const answer = await call<ExploreAnswer>(server, 'GET', `/api/explore/search${query}`, key ? { key } : {});
  t.equal(answer.status, 200, query);
  return answer.body;
};
const projects = (answer: ExploreAnswer) => answer.projects.map((project) => `${project.owner}/${project.project}`);
const datasets = (answer: ExploreAnswer) => answer.datasets.map((dataset) => `${dataset.owner}/${dataset.dataset}`);

t.test('public only, newest first, with model summaries', async (t) => {
  const all = await explore('', alice);
  t.same(projects(all), ['bobby/empty', 'bobby/birds', 'alice/cars']);
  t.same(datasets(all), ['bobby/feathers', 'alice/roads']);
  t.match(
    all.projects.find((project) => project.project === 'cars'),
    { modelCount: 2, modelNames: ['yolo-a', 'yolo-b'], totalBytes: 0, license: 'MIT' },
  );
  t.match(
    all.projects.find((project) => project.project === 'empty'),
    { modelCount: 0, modelNames: [], totalBytes: 0 },
  );
  t.equal(all.hasMore, false);
  t.same(projects(await explore('?sort=oldest')), ['alice/cars', 'bobby/birds', 'bobby/empty']);
});

t.test('filters combine', async (t) => {
  t.same(projects(await explore('?q=ROAD')), ['alice/cars'], 'text in the description, case ignored');
  t.same(datasets(await explore('?q=ROAD')), ['alice/roads']);
  t.same(
    projects(await explore('?task=pose,segment')),
    ['bobby/birds', 'alice/cars'],
    'projects with a model of a task',
  );
  t.same(datasets(await explore('?task=classify')), ['bobby/feathers']);
  t.same(projects(await explore('?license=MIT')), ['alice/cars']);
  t.same(datasets(await explore('?license=MIT')), ['alice/roads']);
  t.same(projects(await explore('?author=bobby')), ['bobby/empty', 'bobby/birds']);
  t.same(projects(await explore('?starred=true', alice)), ['bobby/birds']);
  t.same(datasets(await explore('?starred=true', alice)), ['bobby/feathers']);
  t.same(projects(await explore('?starred=true')), [], 'nothing starred without a key');
  t.same(datasets(await explore('?minImages=1')), []);
  t.same(datasets(await explore('?maxImages=0&type=datasets')), ['bobby/feathers', 'alice/roads']);
  t.same((await explore('?type=datasets')).projects, []);
  t.same((await explore('?type=images')).images, []);
});

t.test('sorts and pages', async (t) => {
  t.same(projects(await explore('?sort=count-desc')), ['alice/cars', 'bobby/birds', 'bobby/empty']);
  t.same(projects(await explore('?sort=count-asc')), ['bobby/empty', 'bobby/birds', 'alice/cars']);
  t.same(projects(await explore('?sort=name-asc')), ['bobby/birds', 'alice/cars', 'bobby/empty']);
  t.same(projects(await explore('?sort=name-desc')), ['bobby/empty', 'alice/cars', 'bobby/birds']);
  t.same(projects(await explore('?sort=stars')), ['bobby/birds', 'bobby/empty', 'alice/cars']);
  t.same(datasets(await explore('?sort=stars')), ['bobby/feathers', 'alice/roads']);
  const first = await explore('?limit=2&type=projects');
  t.same(projects(first), ['bobby/empty', 'bobby/birds']);
  t.equal(first.hasMore, true);
  const second = await explore('?limit=2&offset=2&type=projects');
  t.same(projects(second), ['alice/cars']);
  t.equal(second.hasMore, false);
});
