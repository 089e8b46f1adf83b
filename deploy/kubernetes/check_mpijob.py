#!/usr/bin/python3
"""Checks an MPIJob manifest (kubeflow.org/v2beta1) for this product.

  check_mpijob.py MANIFEST.yaml

The fields the MPI Operator requires (apiVersion, kind, metadata.name, one
Launcher replica and at least one Worker, each with a pod template whose
containers name an image; slotsPerWorker, mpiImplementation,
restartPolicy and runPolicy.cleanPodPolicy within what the operator
accepts), and what this product needs of them: Open MPI; workers running
sshd in the foreground; the launcher running fluid-launch; the trainer's
--checkpoint-dir on a volume the workers mount (rank 0 runs on a worker
and writes it); each worker's CPU request at least its slots x the
trainer's --threads (K ranks per pod share the pod's CPUs). Prints one
line per problem and exits 1, or "ok: ..." and exits 0.
"""
import sys

import yaml

RESTART_POLICIES = ("Always", "OnFailure", "Never", "ExitCode")
CLEAN_POLICIES = ("None", "Running", "All")
IMPLEMENTATIONS = ("OpenMPI", "Intel", "MPICH")


def cpu_quantity(value):
    """CPUs in a Kubernetes quantity ("2", "500m", 1.5)."""
    text = str(value)
    if text.endswith("m"):
        return float(text[:-1]) / 1000
    return float(text)


def container(spec, role, problems):
    """The first container of replica spec `role`, or None."""
    try:
        containers = spec["template"]["spec"]["containers"]
    except (KeyError, TypeError):
        problems.append("%s: no template.spec.containers" % role)
        return None
    if not isinstance(containers, list) or not containers:
        problems.append("%s: template.spec.containers is empty" % role)
        return None
    for c in containers:
        if not isinstance(c, dict) or not c.get("image"):
            problems.append("%s: a container without an image" % role)
    return containers[0] if isinstance(containers[0], dict) else None


def replica_spec(specs, role, problems):
    """Checks spec.mpiReplicaSpecs[role]; its first container or None."""
    spec = specs.get(role)
    if not isinstance(spec, dict):
        problems.append("spec.mpiReplicaSpecs.%s is missing" % role)
        return None, 0
    replicas = spec.get("replicas", 1)
    if not isinstance(replicas, int) or replicas < 1:
        problems.append("%s.replicas must be a positive integer, got %r"
                        % (role, replicas))
        replicas = 0
    if role == "Launcher" and replicas != 1:
        problems.append("Launcher.replicas must be 1, got %r" % replicas)
    policy = spec.get("restartPolicy", "Never")
    if policy not in RESTART_POLICIES:
        problems.append("%s.restartPolicy %r is not one of %s"
                        % (role, policy, ", ".join(RESTART_POLICIES)))
    return container(spec, role, problems), replicas


def flag(args, name):
    """The value of --name=V or --name V in args, else None."""
    for i, a in enumerate(args):
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
        if a == name and i + 1 < len(args):
            return args[i + 1]
    return None


def check_trainer(launcher, worker, slots, problems):
    """The launcher's command, the checkpoint volume, the workers' CPUs."""
    command = list(launcher.get("command") or []) + list(
        launcher.get("args") or [])
    if not command or not command[0].endswith("fluid-launch"):
        problems.append("Launcher: the command must be fluid-launch (it "
                        "starts one rank per slot of /etc/mpi/hostfile), got "
                        "%r" % command[:1])
    wcommand = list(worker.get("command") or []) + list(
        worker.get("args") or [])
    if not wcommand or not wcommand[0].endswith("sshd") or "-D" not in \
            "".join(wcommand[1:]):
        problems.append("Worker: the command must run sshd in the foreground "
                        "(/usr/sbin/sshd -De), got %r" % wcommand)
    ckpt = flag(command, "--checkpoint-dir")
    if ckpt is not None:
        mounts = [m.get("mountPath", "") for m in
                  worker.get("volumeMounts") or []]
        if not any(ckpt == m or ckpt.startswith(m.rstrip("/") + "/")
                   for m in mounts):
            problems.append("Worker: --checkpoint-dir %s is on no volume the "
                            "workers mount (rank 0 runs on a worker and "
                            "writes it)" % ckpt)
    try:
        threads = int(flag(command, "--threads") or 1)
    except ValueError:
        problems.append("Launcher: --threads %r is not a number"
                        % flag(command, "--threads"))
        threads = 1
    request = ((worker.get("resources") or {}).get("requests") or {}).get(
        "cpu")
    try:
        cpus = None if request is None else cpu_quantity(request)
    except ValueError:
        problems.append("Worker: the CPU request %r is not a quantity"
                        % request)
        cpus = None
    if cpus is not None and cpus < slots * threads:
        problems.append("Worker: requests %s CPU(s) but runs %d rank(s) x %d "
                        "thread(s) (slotsPerWorker x --threads)"
                        % (request, slots, threads))


def check(doc):
    """(problems of manifest `doc`, one line each; a summary when none)."""
    problems = []
    if not isinstance(doc, dict):
        return ["the manifest is not a mapping"], ""
    if doc.get("apiVersion") != "kubeflow.org/v2beta1":
        problems.append("apiVersion must be kubeflow.org/v2beta1, got %r"
                        % doc.get("apiVersion"))
    if doc.get("kind") != "MPIJob":
        problems.append("kind must be MPIJob, got %r" % doc.get("kind"))
    if not (doc.get("metadata") or {}).get("name"):
        problems.append("metadata.name is missing")
    spec = doc.get("spec")
    if not isinstance(spec, dict):
        return problems + ["spec is missing"], ""
    slots = spec.get("slotsPerWorker", 1)
    if not isinstance(slots, int) or slots < 1:
        problems.append("spec.slotsPerWorker must be a positive integer, "
                        "got %r" % slots)
        slots = 1
    impl = spec.get("mpiImplementation", "OpenMPI")
    if impl not in IMPLEMENTATIONS:
        problems.append("spec.mpiImplementation %r is not one of %s"
                        % (impl, ", ".join(IMPLEMENTATIONS)))
    elif impl != "OpenMPI":
        problems.append("spec.mpiImplementation must be OpenMPI: the image's "
                        "MPI is Debian's Open MPI, got %r" % impl)
    clean = (spec.get("runPolicy") or {}).get("cleanPodPolicy", "None")
    if clean not in CLEAN_POLICIES:
        problems.append("spec.runPolicy.cleanPodPolicy %r is not one of %s"
                        % (clean, ", ".join(CLEAN_POLICIES)))
    specs = spec.get("mpiReplicaSpecs")
    if not isinstance(specs, dict):
        return problems + ["spec.mpiReplicaSpecs is missing"], ""
    launcher, _ = replica_spec(specs, "Launcher", problems)
    worker, workers = replica_spec(specs, "Worker", problems)
    if launcher is not None and worker is not None:
        check_trainer(launcher, worker, slots, problems)
    if not problems:
        return [], "%d worker(s) x %d slot(s): %d ranks" % (
            workers, slots, workers * slots)
    return problems, ""


def main(argv):
    """Checks argv[1]; the exit status."""
    if len(argv) != 2:
        sys.stderr.write(__doc__)
        return 2
    try:
        with open(argv[1]) as f:
            doc = yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as e:
        print("%s: cannot read the manifest: %s"
              % (argv[1], " ".join(str(e).split())))
        return 1
    try:
        problems, summary = check(doc)
    except (AttributeError, TypeError) as e:
        problems, summary = ["a field of the wrong kind (%s)" % e], ""
    for p in problems:
        print("%s: %s" % (argv[1], p))
    if problems:
        return 1
    print("ok: %s: %s" % (argv[1], summary))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
