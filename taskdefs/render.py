#!/usr/bin/env python3
"""Fills the ECS task definition templates of this folder for one account and region.

Each template (gpu-1.json, cpu.json, ...) holds {{IMAGE}}, {{REGION}} and {{LOG_GROUP}};
the rendered files are what `aws ecs register-task-definition --cli-input-json file://...`
takes. Prints the path of every file written, one per line.

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


def render(template: dict, values: dict[str, str], execution_role_arn: str | None,
           source: str, create_log_group: bool = False) -> dict:
    """Fill a template's {{PLACEHOLDERS}}; set the execution role if given; with
    create_log_group, add awslogs-create-group to every container's awslogs options
    (the role the log driver uses then needs logs:CreateLogGroup)."""
    taskdef = fill(template, values, source)
    if execution_role_arn:
        taskdef["executionRoleArn"] = execution_role_arn
    if create_log_group:
        for container in taskdef.get("containerDefinitions", []):
            logs = container.get("logConfiguration", {})
            if logs.get("logDriver") == "awslogs":
                logs.setdefault("options", {})["awslogs-create-group"] = "true"
    return taskdef


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Render the cnnbench ECS task definitions for one account and region.")
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
        values = {"IMAGE": image, "REGION": args.region, "LOG_GROUP": args.log_group}
        rendered = []
        for path in template_paths(args.templates):
            taskdef = render(json.loads(path.read_text()), values, execution_role, path.name,
                             args.create_log_group)
            rendered.append((args.output_dir / f"{taskdef['family']}.json", taskdef))
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
