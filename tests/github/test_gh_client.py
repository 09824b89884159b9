"""The ghapi wrapper: GITHUB_API_URL, bounded retries honouring Retry-After, clear errors."""
from __future__ import annotations

import pytest
from fake_github import FakeGitHub
from gh_fixtures import fake  # noqa: F401 - pytest fixtures

from pr_review.github.client import GitHubClient, GitHubError

SHA = "a" * 40


class Clock:
    """Records the waits the client asks for instead of sleeping."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def monotonic(self) -> float:
        return self.now


def make_client(fake: FakeGitHub, clock: Clock, token: str = "write-token", api_url: str | None = None) -> GitHubClient:
    return GitHubClient(api_url or fake.url, token, fake.owner, fake.repo, sleep=clock.sleep, clock=clock.monotonic,
                        wall_clock=lambda: 1_700_000_000.0)


def test_requests_go_to_the_given_api_url_not_gh_host(fake: FakeGitHub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GH_HOST", "http://127.0.0.1:9")  # ghapi's own variable must not win
    fake.branches["main"] = SHA
    assert make_client(fake, Clock()).branch("main")["commit"]["sha"] == SHA
    assert [r.path for r in fake.log] == ["/repos/acme/kernels/branches/main"]


def test_enterprise_style_api_prefix() -> None:
    fake = FakeGitHub(api_prefix="/api/v3").start()
    try:
        fake.branches["release/1.0"] = SHA
        client = make_client(fake, Clock(), api_url=fake.url + "/")
        assert client.branch("release/1.0")["commit"]["sha"] == SHA
        assert fake.log[0].path == "/api/v3/repos/acme/kernels/branches/release/1.0"
    finally:
        fake.stop()


def test_5xx_is_retried_with_backoff_then_succeeds(fake: FakeGitHub) -> None:
    fake.branches["main"] = SHA
    fake.inject(502, path="/branches/", times=2, message="Bad Gateway")
    clock = Clock()
    assert make_client(fake, clock).branch("main")["commit"]["sha"] == SHA
    assert clock.sleeps == [1.0, 2.0]
    assert [r.status for r in fake.log] == [502, 502, 200]


def test_secondary_rate_limit_honours_retry_after(fake: FakeGitHub) -> None:
    fake.branches["main"] = SHA
    fake.inject(403, times=1, headers={"Retry-After": "7"},
                message="You have exceeded a secondary rate limit. Please wait a few minutes before you try again.")
    clock = Clock()
    make_client(fake, clock).branch("main")
    assert clock.sleeps == [7.0]


def test_429_with_quota_reset_waits_until_the_reset(fake: FakeGitHub) -> None:
    fake.branches["main"] = SHA
    fake.inject(429, times=1, headers={"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1700000012"},
                message="API rate limit exceeded")
    clock = Clock()
    make_client(fake, clock).branch("main")
    assert clock.sleeps == [12.0]


def test_a_long_rate_limit_is_not_waited_for(fake: FakeGitHub) -> None:
    fake.inject(403, headers={"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1700003600"},
                message="API rate limit exceeded for installation")
    clock = Clock()
    with pytest.raises(GitHubError) as caught:
        make_client(fake, clock).branch("main")
    assert caught.value.unavailable and not caught.value.forbidden
    assert "rate limited for another 3600s" in str(caught.value)
    assert clock.sleeps == [] and len(fake.log) == 1


def test_github_down_gives_up_after_bounded_retries_and_stays_down(fake: FakeGitHub) -> None:
    fake.inject(502, message="Bad Gateway")
    clock = Clock()
    client = make_client(fake, clock)
    with pytest.raises(GitHubError) as caught:
        client.branch("main")
    assert caught.value.unavailable and caught.value.status == 502
    assert len(fake.log) == 3
    with pytest.raises(GitHubError, match="GitHub was unavailable earlier"):
        client.pull(1)
    assert len(fake.log) == 3  # no further request once GitHub is judged down


def test_unreachable_server_is_unavailable(fake: FakeGitHub) -> None:
    url = fake.url
    fake.stop()
    clock = Clock()
    with pytest.raises(GitHubError) as caught:
        make_client(fake, clock, api_url=url).branch("main")
    assert caught.value.unavailable and caught.value.status is None
    assert clock.sleeps == [1.0, 2.0]  # connect failures follow the same bounded backoff


def test_read_only_token_is_forbidden_without_retry(fake: FakeGitHub) -> None:
    clock = Clock()
    with pytest.raises(GitHubError) as caught:
        make_client(fake, clock, token="read-token").create_check_run({"name": "x", "head_sha": SHA})
    assert caught.value.forbidden and caught.value.status == 403
    assert "Resource not accessible by integration" in str(caught.value)
    assert clock.sleeps == [] and len(fake.log) == 1


def test_mutations_are_spaced_a_second_apart(fake: FakeGitHub) -> None:
    clock = Clock()
    client = make_client(fake, clock)
    run = client.create_check_run({"name": "x", "head_sha": SHA})
    client.update_check_run(run["id"], {"status": "in_progress"})
    client.check_runs_for_ref(SHA, "x")  # reads are not spaced
    assert clock.sleeps == [1.0]


def test_unprocessable_request_is_a_plain_error(fake: FakeGitHub) -> None:
    fake.known_sha = lambda sha: False
    with pytest.raises(GitHubError) as caught:
        make_client(fake, Clock()).create_check_run({"name": "x", "head_sha": SHA})
    assert caught.value.status == 422 and not caught.value.unavailable and not caught.value.forbidden
    assert "No commit found for SHA" in str(caught.value)
