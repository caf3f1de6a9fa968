"""moto-server.py - moto's server, plus the public EKS AMIs every AWS region has.

    python3 scripts/moto-server.py -H 127.0.0.1 -p PORT [--k8s-versions 1.31,1.32]

Runs moto exactly as `python3 -m moto.server -H HOST -p PORT` does (same
environment, INITIAL_NO_AUTH_ACTION_COUNT included), and before it serves,
adds what a real region already holds and moto does not: the EKS-optimized
AMIs and the public SSM parameters that point at them, for each Kubernetes
version given.  In AWS these are owned by Amazon and nobody can write them
(moto, like SSM, refuses PutParameter under /aws/), so they are put straight
into moto's backends here.  Nothing else is changed: every call is moto's.

For each version V (the paths are the ones AWS publishes and Karpenter reads,
pkg/providers/amifamily/{al2023,al2,bottlerocket}.go):
  AL2023       /aws/service/eks/optimized-ami/V/amazon-linux-2023/ARCH/VARIANT/
               {recommended, amazon-eks-node-al2023-ARCH-VARIANT-V-vDATE}/image_id
               for x86_64 standard/nvidia/neuron and arm64 standard/nvidia;
  AL2          /aws/service/eks/optimized-ami/V/amazon-linux-2{,-arm64,-gpu}/
               {recommended, amazon-eks{,-arm64,-gpu}-node-V-vDATE}/image_id;
  Bottlerocket /aws/service/bottlerocket/aws-k8s-V{,-nvidia}/ARCH/{latest,BRVER}/image_id.
The AMIs carry the names AWS gives them (so a node booting one knows which
agent it runs), their architecture, and the owner alias "amazon".
Every seeded parameter is printed as "PARAM NAME = AMI (IMAGE NAME)" on stdout
before the server starts.

One behaviour is brought in line with EC2: moto launches CreateFleet
instances with its own 8 GiB default volume, ignoring the launch template's
BlockDeviceMappings, which EC2 applies.  A node's ephemeral storage comes
from its root volume, so instances a fleet launches get their template's
volumes here, as they would in EC2.
"""
import argparse
import datetime
import os
import sys
import threading

DATE = "20251120"          # the AL2023 / AL2 release the "recommended" parameters name
BR_VERSION = "1.50.0"      # the Bottlerocket release behind "latest"


def images_for(v):
    """(parameter names, AMI name, EC2 arch) for Kubernetes version v."""
    out = []
    for arch, variants in (("x86_64", ("standard", "nvidia", "neuron")),
                           ("arm64", ("standard", "nvidia"))):
        for var in variants:
            name = "amazon-eks-node-al2023-%s-%s-%s-v%s" % (arch, var, v, DATE)
            base = "/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/%s" % (v, arch, var)
            out.append(((base + "/recommended/image_id", "%s/%s/image_id" % (base, name)),
                        name, arch))
    for suffix, arch, word in (("", "x86_64", ""), ("-arm64", "arm64", "-arm64"),
                               ("-gpu", "x86_64", "-gpu")):
        name = "amazon-eks%s-node-%s-v%s" % (word, v, DATE)
        base = "/aws/service/eks/optimized-ami/%s/amazon-linux-2%s" % (v, suffix)
        out.append(((base + "/recommended/image_id", "%s/%s/image_id" % (base, name)), name, arch))
    for flavor in ("", "-nvidia"):
        for arch in ("x86_64", "arm64"):
            name = "bottlerocket-aws-k8s-%s%s-%s-v%s-8f1c2a3b" % (v, flavor, arch, BR_VERSION)
            base = "/aws/service/bottlerocket/aws-k8s-%s%s/%s" % (v, flavor, arch)
            out.append(((base + "/latest/image_id", "%s/%s/image_id" % (base, BR_VERSION)),
                        name, arch))
    return out


def seed(region, versions):
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.ec2.models import ec2_backends
    from moto.ssm.models import Parameter, ssm_backends

    ec2 = ec2_backends[DEFAULT_ACCOUNT_ID][region]
    params = ssm_backends[DEFAULT_ACCOUNT_ID][region]._parameters
    now = datetime.datetime.now(datetime.timezone.utc)
    for v in versions:
        for names, image_name, arch in images_for(v):
            ami = ec2.register_image(name=image_name, description="EKS optimized " + image_name)
            ami.architecture = arch
            ami.owner_alias = "amazon"
            ami.root_device_name = "/dev/xvda"
            for pname in names:
                params[pname].append(Parameter(
                    account_id=DEFAULT_ACCOUNT_ID, name=pname, value=ami.id,
                    parameter_type="String", description=None, allowed_pattern=None,
                    keyid=None, last_modified_date=now, version=1, data_type="aws:ec2:image"))
                print("%s = %s (%s)" % (pname, ami.id, image_name))
    sys.stdout.flush()


def fleet_volumes_from_template():
    """CreateFleet instances get their launch template's block devices."""
    import threading
    from moto.ec2.models import fleets, instances

    local = threading.local()
    run_instances = instances.InstanceBackend.run_instances

    def run(self, *args, **kwargs):
        bdms = getattr(local, "bdms", None)
        if bdms and "block_device_mappings" not in kwargs:
            kwargs["block_device_mappings"] = bdms
        return run_instances(self, *args, **kwargs)

    def with_template_volumes(create):
        def wrapped(self, weight_to_add):
            local.bdms = None
            for spec in getattr(self, "launch_specs", []):
                lt = getattr(spec, "launch_template_spec", None)
                if lt:
                    data = self.ec2_backend._get_template_from_args(lt).data
                    local.bdms = data.get("BlockDeviceMappings") or None
                    break
            try:
                return create(self, weight_to_add)
            finally:
                local.bdms = None
        return wrapped

    instances.InstanceBackend.run_instances = run
    fleets.Fleet.create_on_demand_requests = with_template_volumes(
        fleets.Fleet.create_on_demand_requests)
    fleets.Fleet.create_spot_requests = with_template_volumes(fleets.Fleet.create_spot_requests)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-H", "--host", default="127.0.0.1")
    ap.add_argument("-p", "--port", type=int, default=5000)
    ap.add_argument("--region", default=os.environ.get("AWS_REGION", "us-east-1"))
    ap.add_argument("--k8s-versions", default="1.31")
    a = ap.parse_args()
    from moto.moto_server.threaded_moto_server import ThreadedMotoServer

    fleet_volumes_from_template()
    seed(a.region, [v for v in a.k8s_versions.split(",") if v])
    server = ThreadedMotoServer(ip_address=a.host, port=a.port, verbose=False)
    server.start()
    print("moto serving on http://%s:%d" % (a.host, a.port))
    sys.stdout.flush()
    threading.Event().wait()


if __name__ == "__main__":
    main()
