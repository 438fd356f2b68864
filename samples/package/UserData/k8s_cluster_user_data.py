# Tacker's lcm-operation-user-data class for the Kubernetes cluster VNF
# (named by the specs' sample requests). It tells Tacker's OpenStack infra
# driver how to build the Heat stack; mgmtkit reads the stack Heat built and
# does not use this file.
from tacker.vnfm.lcm_user_data.abstract_user_data import AbstractUserData
from tacker.vnfm.lcm_user_data import utils


class KubernetesClusterUserData(AbstractUserData):
    @staticmethod
    def instantiate(base_hot_dict=None, vnfd_dict=None, inst_req_info=None, grant_info=None):
        api_param = utils.get_param_api_param(inst_req_info)
        return utils.create_initial_param_dict(base_hot_dict) | {"nfv": api_param}
