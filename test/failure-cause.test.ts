// The failure cause a user sees for a job that exited non-zero: which output line is chosen, and what is taken out
// of it (keys, host paths outside the job's work dir, terminal escapes) before it leaves the host.
import t from 'tap';
import { failureCause, MAX_CAUSE_CHARS, sanitizeCause } from '../worker-agent/src/runtimes/failure-cause.ts';

const context = {
  workDirs: ['/srv/vp-worker/training/j1/1', '/data/vp/training/j1/1'],
  env: {
    ULTRALYTICS_API_KEY: 'ul_' + 'a'.repeat(40),
    DB_PASSWORD: 'hunter22',
    HF_TOKEN: 'hf_xyzzy',
    EPOCHS: '3',
    SHORT_KEY: 'abc',
  },
};

t.test('the last Python exception line wins; else the last non-empty line; none without output', async (t) => {
  const traceback = [
    'Traceback (most recent call last):',
    '  File "/usr/lib/python3/dist-packages/ultralytics/utils/checks.py", line 814, in check_file',
    '    raise FileNotFoundError(f"\'{file}\' does not exist")',
    "FileNotFoundError: 'yolo99z.yaml' does not exist",
    'Sentry is attempting to send 0 pending events',
    '',
  ];
  t.equal(failureCause(traceback, context), "FileNotFoundError: 'yolo99z.yaml' does not exist");
  t.equal(
    failureCause(
      ['ValueError: first', 'torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB'],
      context,
    ),
    'torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB',
  );
  t.equal(failureCause(['KeyError', 'then nothing'], context), 'KeyError', 'a bare exception name counts');
  t.equal(failureCause(['\x1b[31mRuntimeError: boom\x1b[0m'], context), 'RuntimeError: boom', 'escapes do not hide it');
  t.equal(failureCause(['epoch 1', 'Killed', '   '], context), 'Killed');
  t.equal(failureCause(['NoErrorHere is just prose: fine', 'last'], context), 'last', 'not an exception name');
  t.equal(failureCause([], context), undefined);
  t.equal(failureCause(['', '  '], context), undefined);
});

t.test(
  "keys: the job's secret variables, ul_ and vpw_ keys, bearer and basic credentials, passwords in URLs",
  async (t) => {
    t.equal(
      sanitizeCause(`401 for key ${context.env.ULTRALYTICS_API_KEY} and ul_0123abcd`, context),
      '401 for key [redacted] and [redacted]',
    );
    t.equal(
      sanitizeCause('password hunter22 and token hf_xyzzy, 3 epochs', context),
      'password [redacted] and token [redacted], 3 epochs',
      'only values of secret-named variables',
    );
    t.equal(sanitizeCause('abc', context), 'abc', 'values too short to be keys are left');
    t.equal(
      sanitizeCause('header Authorization: Bearer eyJhbGciOi.x-y_z= sent', context),
      'header Authorization: Bearer [redacted] sent',
    );
    t.equal(sanitizeCause('worker vpw_Z9y8X7 refused', context), 'worker [redacted] refused');
    t.equal(
      sanitizeCause('GET https://bob:s3cret@registry.example/v2/ failed', context),
      'GET https://[redacted]@registry.example/v2/ failed',
    );
  },
);

t.test(
  'paths: inside the work dir relative, anything else absolute cut to its last part; URLs and relative paths stay',
  async (t) => {
    t.equal(
      sanitizeCause("FileNotFoundError: '/srv/vp-worker/training/j1/1/runs/detect/train/weights/last.pt'", context),
      "FileNotFoundError: 'runs/detect/train/weights/last.pt'",
    );
    t.equal(
      sanitizeCause('cwd is /data/vp/training/j1/1, cannot write', context),
      'cwd is ., cannot write',
      'the resolved work dir too',
    );
    t.equal(
      sanitizeCause('File "/usr/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1501', context),
      'File "module.py", line 1501',
    );
    t.equal(
      sanitizeCause('not in /srv/vp-worker/training/j1/10/x or /home/alice/.cache/', context),
      'not in x or .cache',
      "another job's dir is outside",
    );
    t.equal(sanitizeCause('PATH=/opt/venv/bin:/usr/bin', context), 'PATH=bin:bin');
    t.equal(
      sanitizeCause('see http://10.0.0.5:3000/api/models/x and ./runs/a, 1/2 done, and/or data.yaml', context),
      'see http://10.0.0.5:3000/api/models/x and ./runs/a, 1/2 done, and/or data.yaml',
    );
  },
);

t.test('terminal escapes and control characters go; long lines are capped', async (t) => {
  t.equal(sanitizeCause('\x1b[1;31mError\x1b[0m:\x1b]0;title\x07 bad\r\x00', context), 'Error: bad');
  const long = sanitizeCause('ValueError: ' + 'x'.repeat(2000), context);
  t.equal(long.length, MAX_CAUSE_CHARS);
  t.ok(long.endsWith('…'));
});
