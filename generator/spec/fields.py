"""The building blocks of the spec's pydantic models: name and quantity patterns (with the
Kubernetes validation each mirrors), the annotated field types, the strict base model, and the
volume sources a model or cache volume may name."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from .k8s import k8s_object

API_VERSION = "moegen.dev/v1alpha1"

#: RFC 1123 label (Kubernetes object and label-value names).
DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
#: Environment variable names accepted in ``network.env`` (POSIX portable names).
ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"
#: Kubernetes label key (optional DNS-subdomain prefix + name <= 63) and value (<= 63 chars),
#: apimachinery pkg/util/validation (IsQualifiedName, IsValidLabelValue).
LABEL_KEY = r"^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
LABEL_VALUE = r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$"
#: One line of printable text: values that end up in env files, shell scripts and YAML may not
#: carry newlines, C0/C1 control characters, Unicode line/paragraph separators or non-characters
#: (an env-file line per variable, no injection; YAML forbids or breaks lines on them).
ONE_LINE = r"^[^\x00-\x1f\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff]*$"
#: Container image reference (printable ASCII, no whitespace).
IMAGE = r"^[!-~]+$"

#: Kubernetes quantities: CPU (``32``, ``500m``, ``1.5``) and bytes (``512Gi``, ``100G``, ``1e9``
#: excluded: plain or binary/decimal suffixes), apimachinery pkg/api/resource.
CPU_QUANTITY = r"^[0-9]+(\.[0-9]+)?m?$"
MEM_QUANTITY = r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|k|M|G|T|P)?$"
#: RFC 1123 subdomain (names of Secrets, ServiceAccounts, PriorityClasses, schedulers).
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"

CpuQuantity = Annotated[str, StringConstraints(pattern=CPU_QUANTITY, max_length=32)]
MemQuantity = Annotated[str, StringConstraints(pattern=MEM_QUANTITY, max_length=32)]
DnsSubdomain = Annotated[str, StringConstraints(pattern=DNS_SUBDOMAIN, max_length=253)]
#: One engine argument: printable, no whitespace-only or empty strings.
EngineArg = Annotated[str, StringConstraints(pattern=r"^[^\x00-\x1f\x7f-\x9f\u2028\u2029]+$",
                                             max_length=4096)]
#: Kubernetes volume sources a model volume may name, validated as the Kubernetes objects.
K8sCSIVolumeSource = k8s_object("CSIVolumeSource")
K8sEphemeralVolumeSource = k8s_object("EphemeralVolumeSource")
K8sImageVolumeSource = k8s_object("ImageVolumeSource")
K8sEmptyDirVolumeSource = k8s_object("EmptyDirVolumeSource")
K8sCephFSVolumeSource = k8s_object("CephFSVolumeSource")
K8sRBDVolumeSource = k8s_object("RBDVolumeSource")
K8sISCSIVolumeSource = k8s_object("ISCSIVolumeSource")
K8sFCVolumeSource = k8s_object("FCVolumeSource")
K8sAzureFileVolumeSource = k8s_object("AzureFileVolumeSource")
K8sGlusterfsVolumeSource = k8s_object("GlusterfsVolumeSource")
LabelKey = Annotated[str, StringConstraints(pattern=LABEL_KEY, max_length=317)]
LabelValue = Annotated[str, StringConstraints(pattern=LABEL_VALUE, max_length=63)]
Labels = Annotated[dict[LabelKey, LabelValue], Field(max_length=64)]
EnvName = Annotated[str, StringConstraints(pattern=ENV_NAME, max_length=256)]
OneLine = Annotated[str, StringConstraints(pattern=ONE_LINE, max_length=4096)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=False, frozen=True)


class PvcSource(_Model):
    """core/v1 PersistentVolumeClaimVolumeSource."""

    claimName: str = Field(pattern=DNS_LABEL, max_length=253,
        description="PersistentVolumeClaim name.")
    readOnly: bool | None = Field(None, description="Mount read-only.")


class HostPathSource(_Model):
    """core/v1 HostPathVolumeSource (only when the spec asks for a host path)."""

    path: str = Field(pattern=r"^/[^\x00-\x1f\x7f]*$", max_length=4096,
        description="Directory on the node.")
    type: Literal["", "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket",
                  "CharDevice", "BlockDevice"] | None = Field(None,
                      description="Kubernetes hostPath type check.")


class NfsSource(_Model):
    """core/v1 NFSVolumeSource."""

    server: str = Field(min_length=1, max_length=253, pattern=r"^[A-Za-z0-9.:\[\]-]+$",
        description="NFS server.")
    path: str = Field(pattern=r"^/[^\x00-\x1f\x7f]*$", max_length=4096,
        description="Exported path.")
    readOnly: bool | None = Field(None, description="Mount read-only.")


class VolumeSource(_Model):
    """Where the weights come from: exactly one core/v1 VolumeSource member (rule MOD004).
    Each member is passed to Kubernetes as written; an overlay switches sources by setting the
    base's member to null."""

    persistentVolumeClaim: PvcSource | None = Field(None,
        description="Kubernetes persistentVolumeClaim volume source.")
    hostPath: HostPathSource | None = Field(None, description="Kubernetes hostPath volume source.")
    nfs: NfsSource | None = Field(None, description="Kubernetes nfs volume source.")
    csi: K8sCSIVolumeSource | None = Field(
        None, description="Kubernetes csi volume source (CSIVolumeSource).")
    ephemeral: K8sEphemeralVolumeSource | None = Field(
        None, description="Kubernetes ephemeral volume source (EphemeralVolumeSource).")
    image: K8sImageVolumeSource | None = Field(
        None, description="Kubernetes image volume source (ImageVolumeSource).")
    emptyDir: K8sEmptyDirVolumeSource | None = Field(
        None, description="Kubernetes emptyDir volume source (EmptyDirVolumeSource).")
    cephfs: K8sCephFSVolumeSource | None = Field(
        None, description="Kubernetes cephfs volume source (CephFSVolumeSource).")
    rbd: K8sRBDVolumeSource | None = Field(
        None, description="Kubernetes rbd volume source (RBDVolumeSource).")
    iscsi: K8sISCSIVolumeSource | None = Field(
        None, description="Kubernetes iscsi volume source (ISCSIVolumeSource).")
    fc: K8sFCVolumeSource | None = Field(
        None, description="Kubernetes fc volume source (FCVolumeSource).")
    azureFile: K8sAzureFileVolumeSource | None = Field(
        None, description="Kubernetes azureFile volume source (AzureFileVolumeSource).")
    glusterfs: K8sGlusterfsVolumeSource | None = Field(
        None, description="Kubernetes glusterfs volume source (GlusterfsVolumeSource).")

    def sources(self) -> dict[str, dict[str, Any]]:
        """The members that are set (as Kubernetes expects them, unset keys dropped)."""
        return self.model_dump(exclude_none=True)
