#!/usr/bin/env python3
"""Fills the ECS task definition and AWS Batch job definition templates of this folder
for one account and region.

Each template (gpu-1.json, cpu.json, ..., batch-mnp.json) holds {{IMAGE}}, {{REGION}}
and {{LOG_GROUP}}; the AWS Batch multi-node job definition also {{SSH_KEY_PARAMETER_ARN}}
(--ssh-key-parameter), and its node size follows --node-gpus, --node-vcpus,
--node-memory-mib and --efa-devices. The rendered files are what
`aws ecs register-task-definition --cli-input-json file://...` and
`aws batch register-job-definition --cli-input-json file://...` take. Prints the path of
every file written, one per line.

    python3 taskdefs/render.py --account 123456789012 --region us-east-1 \\
        --execution-role arn:aws:iam::123456789012:role/... --output-dir build/taskdefs
"""
from __future__ import annotations

import argparse
import json
import pathlib
import re
import sys

TEMPLATES_DIR = pathlib.Path(__file__).resolve().parent
PLACEHOLDER = re.compile(r"\{\{([A-Z_]+)\}\}")

# Shapes AWS gives these identifiers; a typo caught here is not a failed task later.
REGION_RE = re.compile(r"^[a-z]{2}(-gov|-iso[a-z]*)?-[a-z]+-[0-9]+$")
ACCOUNT_RE = re.compile(r"^[0-9]{12}$")
LOG_GROUP_RE = re.compile(r"^[A-Za-z0-9_\-/.#]{1,512}$")
ROLE_NAME_RE = re.compile(r"^[\w+=,.@/-]{1,512}$")
# SSM Parameter Store names: letters, digits and _.-/ , at most 2048 characters.
PARAMETER_NAME_RE = re.compile(r"^/?[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$")
# NCCL's shared-memory transport wants about 1 GiB of /dev/shm per GPU (README).
SHM_MIB_PER_GPU = 1024


def partition(region: str) -> str:
    """The ARN partition of a region (China and GovCloud have their own)."""
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


def default_image(account: str, region: str) -> str:
    """The ECR repository cnnbench, tag latest, of this account and region."""
    domain = "amazonaws.com.cn" if region.startswith("cn-") else "amazonaws.com"
    return f"{account}.dkr.ecr.{region}.{domain}/cnnbench:latest"


def role_arn(role: str, account: str, region: str) -> str:
    """An IAM role ARN from an ARN (kept) or a role name."""
    if role.startswith("arn:"):
        return role
    if not ROLE_NAME_RE.match(role):
        raise ValueError(f"--execution-role: '{role}' is neither an ARN nor an IAM role name")
    return f"arn:{partition(region)}:iam::{account}:role/{role}"


def parameter_arn(name: str, account: str, region: str) -> str:
    """The ARN of an SSM Parameter Store parameter from its name (with or without the
    leading slash; the ARN has one slash before the name either way) or its ARN."""
    if name.startswith("arn:"):
        return name
    if len(name) > 2048 or not PARAMETER_NAME_RE.match(name):
        raise ValueError(f"--ssh-key-parameter: '{name}' is neither a Parameter Store name "
                         "(letters, digits, _ . - and /) nor an ARN")
    return f"arn:{partition(region)}:ssm:{region}:{account}:parameter/{name.lstrip('/')}"


def is_batch(template: dict) -> bool:
    """An AWS Batch job definition (the ECS task definitions have a family instead)."""
    return "jobDefinitionName" in template


def fill(value, values: dict[str, str], where: str):
    """Replaces every {{NAME}} in the strings of a JSON value."""
    if isinstance(value, dict):
        return {k: fill(v, values, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, values, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, str):
        def substitute(match: re.Match) -> str:
            name = match.group(1)
            if name not in values:
                raise ValueError(f"{where}: unknown placeholder {{{{{name}}}}} "
                                 f"(known: {', '.join(sorted(values))})")
            return values[name]
        return PLACEHOLDER.sub(substitute, value)
    return value


def template_paths(names: list[str]) -> list[pathlib.Path]:
    available = {p.stem: p for p in sorted(TEMPLATES_DIR.glob("*.json"))}
    if not names:
        return list(available.values())
    unknown = [n for n in names if n not in available]
    if unknown:
        raise ValueError(f"unknown template(s) {', '.join(unknown)} "
                         f"(available: {', '.join(available)})")
    return [available[n] for n in names]


def size_node(container: dict, args: argparse.Namespace) -> None:
    """Sets the GPUs, vCPUs, memory and EFA devices of one node of a Batch job, keeping
    the template's value where an option is not given; /dev/shm grows with the GPUs."""
    wanted = {"GPU": args.node_gpus, "VCPU": args.node_vcpus, "MEMORY": args.node_memory_mib}
    for requirement in container.get("resourceRequirements", []):
        if wanted.get(requirement["type"]) is not None:
            requirement["value"] = str(wanted[requirement["type"]])
    gpus = next((int(r["value"]) for r in container.get("resourceRequirements", [])
                 if r["type"] == "GPU"), 0)
    linux = container.setdefault("linuxParameters", {})
    linux["sharedMemorySize"] = max(linux.get("sharedMemorySize", 0), SHM_MIB_PER_GPU * gpus)
    if args.efa_devices is not None:
        # One uverbs device per EFA interface of the instance.
        linux["devices"] = [d for d in linux.get("devices", [])
                            if not d["hostPath"].startswith("/dev/infiniband/")]
        linux["devices"] += [{"hostPath": f"/dev/infiniband/uverbs{i}",
                              "containerPath": f"/dev/infiniband/uverbs{i}",
                              "permissions": ["READ", "WRITE", "MKNOD"]}
                             for i in range(args.efa_devices)]
        if not linux["devices"]:
            del linux["devices"]


def render(template: dict, values: dict[str, str], execution_role_arn: str | None,
           source: str, args: argparse.Namespace) -> dict:
    """Fill a template's {{PLACEHOLDERS}}; set the execution role if given (and
    size a Batch job's nodes from args); with args.create_log_group, add
    awslogs-create-group to every container's awslogs options (the role the log
    driver uses then needs logs:CreateLogGroup)."""
    taskdef = fill(template, values, source)
    if is_batch(taskdef):
        if not execution_role_arn:
            raise ValueError(f"--execution-role: {source} (AWS Batch) reads CNNBENCH_MNP_SSH_KEY "
                             "from Parameter Store through an execution role; give one (cluster.yml's "
                             "TaskExecutionRoleArn), or name only the ECS templates to render")
        for node_range in taskdef["nodeProperties"]["nodeRangeProperties"]:
            node_range["container"]["executionRoleArn"] = execution_role_arn
            size_node(node_range["container"], args)
    elif execution_role_arn:
        taskdef["executionRoleArn"] = execution_role_arn
    if getattr(args, "create_log_group", False):
        for container in taskdef.get("containerDefinitions", []):
            logs = container.get("logConfiguration", {})
            if logs.get("logDriver") == "awslogs":
                logs.setdefault("options", {})["awslogs-create-group"] = "true"
    return taskdef


def output_name(taskdef: dict) -> str:
    return (taskdef["jobDefinitionName"] if is_batch(taskdef) else taskdef["family"]) + ".json"


def positive(flag: str, limit: int):
    """An argparse type: a whole number from 1 (0 for --efa-devices) to limit."""
    low = 0 if flag == "--efa-devices" else 1

    def parse(text: str) -> int:
        if not re.fullmatch(r"[0-9]{1,9}", text) or not low <= int(text) <= limit:
            raise argparse.ArgumentTypeError(f"'{text}' is not a whole number from {low} to {limit}")
        return int(text)
    return parse


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Render the cnnbench ECS task definitions and AWS Batch job definition "
                    "for one account and region.")
    parser.add_argument("--account", required=True, help="12-digit AWS account id")
    parser.add_argument("--region", required=True, help="AWS region, e.g. us-east-1")
    parser.add_argument("--log-group", default="/ecs/cnnbench",
                        help="CloudWatch Logs group (default: %(default)s, as cluster.yml makes)")
    parser.add_argument("--image",
                        help="image URI (default: ACCOUNT.dkr.ecr.REGION.amazonaws.com/cnnbench:latest)")
    parser.add_argument("--execution-role",
                        help="task execution role, ARN or name (optional on EC2, where the "
                             "instance role pulls from ECR and writes the logs)")
    parser.add_argument("--create-log-group", action="store_true",
                        help="let the log driver create the log group (needs logs:CreateLogGroup, "
                             "which the standard ecsTaskExecutionRole and cluster.yml's roles "
                             "lack; default: off, the group must exist, as cluster.yml makes it)")
    batch = parser.add_argument_group(
        "AWS Batch multi-node job definition (batch-mnp); sizes default to the template's "
        "(p4d.24xlarge: 8 GPUs, 96 vCPUs, 1 TiB, 4 EFA)")
    batch.add_argument("--ssh-key-parameter", default="/cnnbench/mnp-ssh-key",
                       help="Parameter Store SecureString (name or ARN) holding the private key the "
                            "job's nodes share (default: %(default)s)")
    batch.add_argument("--node-gpus", type=positive("--node-gpus", 16),
                       help="GPUs of each node (one rank each)")
    batch.add_argument("--node-vcpus", type=positive("--node-vcpus", 1024), help="vCPUs of each node")
    batch.add_argument("--node-memory-mib", type=positive("--node-memory-mib", 100_000_000),
                       help="memory of each node in MiB (less than the instance's: ECS keeps some)")
    batch.add_argument("--efa-devices", type=positive("--efa-devices", 64),
                       help="EFA interfaces of each node, mounted as /dev/infiniband/uverbsN "
                            "(0 for instance types without EFA)")
    parser.add_argument("--output-dir", default="build/taskdefs", type=pathlib.Path,
                        help="where the rendered files go (default: %(default)s)")
    parser.add_argument("templates", nargs="*",
                        help="templates to render, by name (gpu-1, cpu, ...); default: all")
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    try:
        if not ACCOUNT_RE.match(args.account):
            raise ValueError(f"--account: '{args.account}' is not a 12-digit AWS account id")
        if not REGION_RE.match(args.region):
            raise ValueError(f"--region: '{args.region}' is not an AWS region such as us-east-1")
        if not LOG_GROUP_RE.match(args.log_group):
            raise ValueError(f"--log-group: '{args.log_group}' is not a valid log group name "
                             "(1-512 of A-Z a-z 0-9 _ - / . #)")
        image = args.image if args.image is not None else default_image(args.account, args.region)
        if not image or any(c.isspace() for c in image):
            raise ValueError(f"--image: '{image}' is not an image URI")
        execution_role = (role_arn(args.execution_role, args.account, args.region)
                          if args.execution_role else None)
        values = {"IMAGE": image, "REGION": args.region, "LOG_GROUP": args.log_group,
                  "SSH_KEY_PARAMETER_ARN": parameter_arn(args.ssh_key_parameter, args.account,
                                                         args.region)}
        rendered = []
        for path in template_paths(args.templates):
            taskdef = render(json.loads(path.read_text()), values, execution_role, path.name, args)
            rendered.append((args.output_dir / output_name(taskdef), taskdef))
    except (ValueError, json.JSONDecodeError) as error:
        print(f"render.py: {error}", file=sys.stderr)
        return 2
    args.output_dir.mkdir(parents=True, exist_ok=True)
    for out, taskdef in rendered:
        out.write_text(json.dumps(taskdef, indent=2) + "\n")
        print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
