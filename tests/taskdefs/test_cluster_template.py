"""taskdefs/cluster.yml: cfn-lint passes (every rule level), and the template keeps its
contract with the rest of the project: GPU support in the GPU instances' user data, the
log group the task definitions write to, a dashboard whose JSON parses and whose
metrics are the ones cnnbench emits in EMF, and the outputs the README uses."""
from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
import unittest

import support

support.require_module("cfnlint")
from cfnlint.decode import decode  # noqa: E402  (after the skip check)

TEMPLATE = support.REPO / "taskdefs" / "cluster.yml"
RENDER = support.REPO / "taskdefs" / "render.py"
EMF_SOURCE = support.REPO / "bench" / "report" / "emf_report.cpp"
EMF_NAMESPACE = "cnnbench"
EMF_DIMENSIONS = ["Model", "Precision", "NumGPUs"]
EMF_METRICS = {"ImagesPerSecond", "TotalImagesPerSecond", "StepTime", "Loss"}


class ClusterTemplate(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        template, errors = decode(str(TEMPLATE))
        if errors:
            raise AssertionError(f"cluster.yml does not parse: {errors}")
        cls.template = template
        cls.resources = template["Resources"]
        cls.parameters = template["Parameters"]

    def of_type(self, kind: str) -> dict:
        return {name: r for name, r in self.resources.items() if r["Type"] == kind}

    def test_cfn_lint(self):
        # The cfn-lint command line, run by the interpreter that has the package.
        run = subprocess.run(
            [sys.executable, "-c", "import sys; from cfnlint.runner import main; sys.exit(main())",
             "--include-checks", "I", "--", str(TEMPLATE)],
            text=True, capture_output=True, timeout=300)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)

    def test_two_public_subnets_in_two_zones(self):
        subnets = self.of_type("AWS::EC2::Subnet")
        self.assertEqual(len(subnets), 2)
        zones = {json.dumps(s["Properties"]["AvailabilityZone"]) for s in subnets.values()}
        self.assertEqual(len(zones), 2)
        for subnet in subnets.values():
            self.assertTrue(subnet["Properties"]["MapPublicIpOnLaunch"])
        self.assertEqual(len(self.of_type("AWS::EC2::InternetGateway")), 1)
        routes = self.of_type("AWS::EC2::Route")
        self.assertIn({"Ref": "InternetGateway"},
                      [r["Properties"].get("GatewayId") for r in routes.values()])

    def test_capacity_defaults(self):
        self.assertEqual(self.parameters["CpuInstanceType"]["Default"], "c5.2xlarge")
        self.assertEqual(int(self.parameters["CpuDesiredCapacity"]["Default"]), 2)
        self.assertIn("/aws/service/ecs/optimized-ami/", self.parameters["GpuAmiId"]["Default"])
        self.assertIn("/gpu/recommended/image_id", self.parameters["GpuAmiId"]["Default"])
        self.assertEqual(self.parameters["GpuAmiId"]["Type"],
                         "AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>")

    def test_user_data_joins_the_cluster_and_enables_gpus(self):
        def user_data(name):
            data = self.resources[name]["Properties"]["LaunchTemplateData"]["UserData"]
            return data["Fn::Base64"]["Fn::Sub"]
        self.assertIn("ECS_CLUSTER=${Cluster}", user_data("CpuLaunchTemplate"))
        self.assertIn("ECS_CLUSTER=${Cluster}", user_data("GpuLaunchTemplate"))
        self.assertIn("ECS_ENABLE_GPU_SUPPORT=true", user_data("GpuLaunchTemplate"))
        gpu_template = self.resources["GpuLaunchTemplate"]["Properties"]["LaunchTemplateData"]
        self.assertEqual(gpu_template["ImageId"], {"Ref": "GpuAmiId"})

    def test_capacity_providers_are_associated(self):
        providers = self.of_type("AWS::ECS::CapacityProvider")
        association = next(iter(self.of_type("AWS::ECS::ClusterCapacityProviderAssociations").values()))
        self.assertEqual(sorted(p["Ref"] for p in association["Properties"]["CapacityProviders"]),
                         sorted(providers))

    def test_log_group_matches_render_default(self):
        # The task definitions rendered with defaults write where the stack's group is.
        spec = importlib.util.spec_from_file_location("render", RENDER)
        render = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(render)
        args = render.parse_args(["--account", "123456789012", "--region", "us-east-1"])
        self.assertEqual(self.parameters["LogGroupName"]["Default"], args.log_group)

    def test_cpu_instances_carry_the_cpu_task_attribute(self):
        def user_data(name):
            return json.dumps(self.resources[name]["Properties"]["LaunchTemplateData"]["UserData"])
        attribute = 'ECS_INSTANCE_ATTRIBUTES={\\"cnnbench.capacity\\":\\"cpu\\"}'
        self.assertIn(attribute, user_data("CpuLaunchTemplate"))
        self.assertNotIn("cnnbench.capacity", user_data("GpuLaunchTemplate"))

    def test_instance_changes_replace_the_instances(self):
        for name in ("CpuAutoScalingGroup", "GpuAutoScalingGroup"):
            with self.subTest(name):
                rolling = self.resources[name]["UpdatePolicy"]["AutoScalingRollingUpdate"]
                self.assertEqual(rolling["MaxBatchSize"], 1)
                self.assertEqual(rolling["MinInstancesInService"], 0)

    def test_containers_cannot_reach_instance_credentials_through_a_hop(self):
        for name, template in self.of_type("AWS::EC2::LaunchTemplate").items():
            with self.subTest(name):
                self.assertEqual(template["Properties"]["LaunchTemplateData"]["MetadataOptions"],
                                 {"HttpTokens": "required", "HttpPutResponseHopLimit": 1})

    def test_session_manager_is_optional(self):
        self.assertEqual(self.template["Conditions"]["SessionManager"],
                         {"Fn::Equals": [{"Ref": "EnableSessionManager"}, "true"]})
        managed = json.dumps(self.resources["InstanceRole"]["Properties"]["ManagedPolicyArns"])
        self.assertIn('"Fn::If": ["SessionManager"', managed)

    def test_ecs_tasks_trust_is_limited_to_this_account(self):
        for name, role in self.of_type("AWS::IAM::Role").items():
            for statement in role["Properties"]["AssumeRolePolicyDocument"]["Statement"]:
                if "ecs-tasks" in json.dumps(statement["Principal"]):
                    with self.subTest(name):
                        self.assertEqual(statement["Condition"]["StringEquals"],
                                         {"aws:SourceAccount": {"Ref": "AWS::AccountId"}})

    def test_execution_role_is_scoped_to_the_repository_and_log_group(self):
        role = self.resources["TaskExecutionRole"]["Properties"]
        self.assertNotIn("ManagedPolicyArns", role)
        statements = [s for p in role["Policies"] for s in p["PolicyDocument"]["Statement"]]
        for statement in statements:
            actions = statement["Action"]
            actions = [actions] if isinstance(actions, str) else actions
            with self.subTest(actions):
                if actions == ["ecr:GetAuthorizationToken"]:
                    continue  # IAM knows no narrower resource for it
                resource = json.dumps(statement["Resource"])
                self.assertNotEqual(statement["Resource"], "*")
                if all(a.startswith("ecr:") for a in actions):
                    self.assertIn(":repository/${RepositoryName}", resource)
                else:
                    self.assertEqual(statement["Resource"], {"Fn::Sub": "${LogGroup.Arn}"})

    def test_alarms_on_interrupted_runs_and_replica_mismatch(self):
        alarms = self.of_type("AWS::CloudWatch::Alarm")
        queries = {a["Properties"]["Metrics"][0]["Expression"] for a in alarms.values()}
        self.assertEqual(queries, {
            "SELECT MAX(Interrupted) FROM SCHEMA(cnnbench, Model)",
            "SELECT MAX(ReplicaMismatch) FROM SCHEMA(cnnbench, Model)"})
        for name, alarm in alarms.items():
            with self.subTest(name):
                self.assertEqual(alarm["Properties"]["ComparisonOperator"], "GreaterThanThreshold")
                self.assertEqual(alarm["Properties"]["Threshold"], 0)

    def test_no_role_may_create_log_groups(self):
        # The stack makes the group and the task definitions do not ask the driver to.
        for name, role in self.of_type("AWS::IAM::Role").items():
            with self.subTest(name):
                self.assertNotIn("logs:CreateLogGroup", json.dumps(role["Properties"]))

    def dashboard_widgets(self) -> list[dict]:
        body = self.resources["Dashboard"]["Properties"]["DashboardBody"]["Fn::Sub"]
        known = {"${AWS::Region}": "us-east-1", "${LogGroup}": "/ecs/cnnbench"}
        for variable, value in known.items():
            body = body.replace(variable, value)
        self.assertNotIn("${", body, "a variable !Sub does not know")
        return json.loads(body)["widgets"]

    def test_dashboard_shows_the_emf_metrics(self):
        schema = "{" + ",".join([EMF_NAMESPACE, *EMF_DIMENSIONS]) + "}"
        shown = set()
        for widget in self.dashboard_widgets():
            if widget["type"] != "metric":
                continue
            for metric in widget["properties"]["metrics"]:
                expression = metric[0]["expression"]
                self.assertIn(schema, expression)
                shown |= set(re.findall(r'MetricName="(\w+)"', expression))
        self.assertEqual(shown, EMF_METRICS)

    def test_dashboard_names_are_the_programs(self):
        # The names the dashboard reads are the ones bench/report/emf_report.cpp writes: a rename
        # there would leave the dashboard silently empty.
        source = EMF_SOURCE.read_text()
        fields = set(EMF_DIMENSIONS) | EMF_METRICS
        for widget in self.dashboard_widgets():
            if widget["type"] == "log":
                query = widget["properties"]["query"]
                fields |= set(re.findall(r"\b([A-Z][A-Za-z0-9]+)\b", query.split("|", 1)[1]))
        for name in sorted(fields):
            self.assertIn(f'"{name}"', source, f"{name} is not an EMF name of bench/report/emf_report.cpp")
        flags = (support.REPO / "bench" / "cli" / "flag_table.cpp").read_text()
        self.assertRegex(flags, r'\.name = "metrics_namespace",[^;]*\.default_value = \{\.gpu = "'
                         + re.escape(EMF_NAMESPACE) + '"\}')

    def test_outputs(self):
        for name in ("ClusterName", "CpuCapacityProvider", "GpuCapacityProvider", "LogGroupName",
                     "TaskExecutionRoleArn"):
            self.assertIn(name, self.template["Outputs"])


if __name__ == "__main__":
    unittest.main()
