"""A launch's claims as the tool reads them (``lti.LaunchClaims``, a pydantic model) and the
launch they make: every refusal in today's words and advice, and a claim of the wrong shape
refused the same way, naming the claim, instead of failing inside the tool."""

from __future__ import annotations

from typing import Any

import pytest

from autograder.exceptions import LaunchRefused
from autograder.service import lti
from autograder.service.lti import CLAIM, DL_CLAIM, Launch, Platform

PLATFORM = Platform(issuer="https://moodle.example", client_id="client-1", auth_login_url="a", token_url="t",
                    jwks_url="j", deployment_ids=("3",))
LINK = {  # what Moodle 4.5 sends for a resource link launch (the claims the tool reads)
    "sub": "2", "given_name": "Ann", "family_name": "Example", "email": "ann@example.org",
    f"{CLAIM}/deployment_id": "3", f"{CLAIM}/version": "1.3.0", f"{CLAIM}/message_type": "LtiResourceLinkRequest",
    f"{CLAIM}/roles": ["http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"],
    f"{CLAIM}/context": {"id": "2", "label": "ML", "title": "Machine learning", "type": ["CourseOffering"]},
    f"{CLAIM}/resource_link": {"id": "7", "title": "Week 1"}, f"{CLAIM}/custom": {"week": "week01"},
    f"{CLAIM}/launch_presentation": {"locale": "ja", "document_target": "iframe"},
    lti.AGS_ENDPOINT: {"scope": list(lti.AGS_SCOPES), "lineitem": "https://moodle.example/l/1?type_id=3",
                       "lineitems": "https://moodle.example/l?type_id=3"},
}
DEEP = {**{k: v for k, v in LINK.items() if k != f"{CLAIM}/resource_link"},
        f"{CLAIM}/message_type": "LtiDeepLinkingRequest",
        f"{DL_CLAIM}/deep_linking_settings": {"deep_link_return_url": "https://moodle.example/dl", "data": "d1",
                                              "accept_types": ["ltiResourceLink"]}}


def launch(claims: dict[str, Any]) -> Launch:
    return lti._launch_from(claims, PLATFORM)


def test_a_moodle_launch_becomes_the_launch_the_tool_works_with() -> None:
    assert launch(LINK) == Launch(
        message_type="LtiResourceLinkRequest", platform=PLATFORM, deployment_id="3", sub="2", name="Ann Example",
        email="ann@example.org", roles=("http://purl.imsglobal.org/vocab/lis/v2/membership#Learner",),
        context_id="2", context_title="Machine learning", resource_link_id="7", custom={"week": "week01"},
        lineitem="https://moodle.example/l/1?type_id=3", lineitems="https://moodle.example/l?type_id=3",
        ags_scopes=lti.AGS_SCOPES, locale="ja")
    deep = launch(DEEP)
    assert (deep.deep_link_return_url, deep.deep_link_data, deep.resource_link_id) == ("https://moodle.example/dl",
                                                                                       "d1", None)
    bare = launch({k: LINK[k] for k in ("sub", f"{CLAIM}/deployment_id", f"{CLAIM}/version",
                                        f"{CLAIM}/message_type", f"{CLAIM}/resource_link")})
    assert (bare.name, bare.context_id, bare.roles, bare.ags_scopes, bare.email) == ("2", "7", (), (), None)


def _without(claims: dict[str, Any], name: str) -> dict[str, Any]:
    return {k: v for k, v in claims.items() if k != name}


@pytest.mark.parametrize(("claims", "detail", "advice"), [
    ({**LINK, f"{CLAIM}/deployment_id": "9"}, "deployment '9' of https://moodle.example is not registered here: "
     "the administrator registers the tool again, or adds the deployment id by hand", lti.ASK_ADMIN),
    (_without(LINK, f"{CLAIM}/version"), "LTI version None is not supported (1.3.0 is)", lti.ASK_ADMIN),
    ({**LINK, f"{CLAIM}/version": "1.1"}, "LTI version '1.1' is not supported (1.3.0 is)", lti.ASK_ADMIN),
    ({**LINK, f"{CLAIM}/message_type": "LtiSubmissionReviewRequest"},
     "message type 'LtiSubmissionReviewRequest' is not supported", lti.ASK_ADMIN),
    ({**LINK, "sub": ""}, "the launch carries no user (sub): anonymous launches are not supported", lti.ANONYMOUS),
    (_without(LINK, f"{CLAIM}/resource_link"), "a resource link launch without a resource_link id", lti.ASK_ADMIN),
    ({**DEEP, f"{DL_CLAIM}/deep_linking_settings": {"accept_types": ["ltiResourceLink"]}},
     "a deep linking request without deep_link_return_url", lti.ASK_ADMIN),
    ({**DEEP, f"{DL_CLAIM}/deep_linking_settings": {"deep_link_return_url": "https://m/dl", "accept_types": ["file"]}},
     "this place in the LMS does not accept LTI links (accept_types lacks ltiResourceLink): add the tool as an "
     "external tool activity", lti.NOT_AN_ACTIVITY_PLACE),
])
def test_each_refusal_keeps_its_words_and_advice(claims: dict[str, Any], detail: str, advice: str) -> None:
    with pytest.raises(LaunchRefused) as refused:
        launch(claims)
    assert (str(refused.value), refused.value.advice) == (detail, advice)


@pytest.mark.parametrize(("claim", "value", "named"), [
    (f"{CLAIM}/context", "course-2", f"{CLAIM}/context"),
    (f"{CLAIM}/resource_link", {"id": ["7"]}, f"{CLAIM}/resource_link/id"),
    (lti.AGS_ENDPOINT, {"scope": "https://purl.imsglobal.org/spec/lti-ags/scope/score"}, f"{lti.AGS_ENDPOINT}/scope"),
    (f"{CLAIM}/launch_presentation", ["ja"], f"{CLAIM}/launch_presentation"),
])
def test_a_claim_of_the_wrong_shape_is_refused_naming_it(claim: str, value: object, named: str) -> None:
    with pytest.raises(LaunchRefused, match=rf"^the id_token's claim {named} is not as LTI 1.3 defines it: ") as refused:
        launch({**LINK, claim: value})
    assert refused.value.advice == lti.ASK_ADMIN
