# SPDX-License-Identifier: Apache-2.0
"""How a pass's builds are run: the Build record an executor is given, the Result it gives
back, and the executors by name (local: local.py, processes on this machine; kubernetes:
jobs.py, a batch/v1 Job per build).

The interface, which every executor keeps:

    results = executor.run(builds, parallel)

BUILDS a list of Build, each one build-driver-package run (one target: one kernel, driver
version, flavour, architecture); PARALLEL the most builds running at once (>= 1). It returns
one Result per Build, in the order of BUILDS, once every build has ended: a build that failed,
could not start or was stopped is a Result with ok False and a reason in `last`; it never
raises for one build's failure (it raises only when it cannot run builds at all, e.g. the API
refused the Job objects it made: ExecutorError, one line). A build's outcome is its exit code
and what it left in its stage dir: ok is True only when the command exited 0 and
STAGE/stage.json exists (build-driver-package --stage-to, docs/building-packages.md); the pass
publishes the stage dirs of the ok builds, all at once, after run() returns.

Stopping: when the pass is told to stop (SIGTERM, SIGINT) while run() runs, the executor stops
the builds it started (local: the process groups are killed; kubernetes: the Jobs are deleted
with their pods) and returns, or raises KeyboardInterrupt/SystemExit up; no build outlives the
pass that started it.

Paths: Build.argv, work, stage and log are absolute paths on the machine of the pass, under
its --work. argv[0] is build-driver-package (this tree's, or --bdp's). An executor that runs
the build elsewhere runs the same argv there with the same paths (a volume mounted at the
pass's --work path, the feed inputs inside it), and brings the log and the stage dir back to
those paths before returning, so that the pass reads them the same way for every executor.

The executors as cli.py makes them: local.Local() and jobs.Executor(client, kconf) (CLIENT a
kube.Client, KCONF the configuration's "kubernetes" object, whose keys jobs.py owns and
judges). In a cluster the publish is held under lease.Lease(client, namespace,
"nvidia-supply-publish", holder), a context manager (publish.py's GUARD).
"""
import dataclasses
import os


class ExecutorError(Exception):
    """The executor cannot run builds at all (one line: the cause and the fix)."""


@dataclasses.dataclass
class Build:
    """One build-driver-package run.

    id      the target's build_id() (targets.py): [a-z0-9-], at most 52 characters, unique
            in the pass; names the work, stage and log paths and a Job
    target  the Target it builds (targets.py), for the report and for labels
    argv    the whole command line, argv[0] the program: build-driver-package --kernel R --os OS
            [--os-build B] --arch A --flavour F ROW_ARGS --stage-to STAGE --work WORK --quiet
            EXTRA (SPEC47 §3)
    work    WORK/build/ID: the build's own work directory (kept for a rerun's cache)
    stage   WORK/stage/ID: where the build leaves its package and stage.json; emptied before
            the build starts
    log     WORK/log/ID.log: the build's stdout and stderr, whole
    jobs    the -j the build was given (--jobs in argv), so that an executor can size its
            share of the machine (a Job's cpu request)
    """
    id: str
    target: object
    argv: list
    work: str
    stage: str
    log: str
    jobs: int = 1


@dataclasses.dataclass
class Result:
    """What became of one Build.

    id         Build.id
    ok         exit 0 and STAGE/stage.json present
    exit_code  the command's exit status; negative: killed by that signal; None: never ran
    seconds    wall time from start to end (0.0 when it never ran)
    last       the log's last line (build-driver-package's last progress or error line), or
               why it never ran or was stopped
    stage      Build.stage (the dir the pass publishes when ok)
    """
    id: str
    ok: bool
    exit_code: object
    seconds: float
    last: str
    stage: str


NAMES = ("local", "kubernetes")


def stage_ok(stage):
    """Whether STAGE holds a finished build's record."""
    return os.path.isfile(os.path.join(stage, "stage.json"))
