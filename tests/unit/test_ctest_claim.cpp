#include <catch2/catch.hpp>

#include <set>

#include <unistd.h>

#include "runs/ctest_claim.hpp"

using namespace evgate;

namespace {

const ProcessIdentity first_ctest{100, 5000}, second_ctest{200, 6000};
const ProcessIdentity step_a{101, 5001}, step_b{102, 5002}, step_c{201, 6001};

// Which recorded processes still run, for take_claim.
struct Living {
    std::set<int> pids;
    bool operator()(const ProcessIdentity& p) const { return pids.count(p.pid) != 0; }
};

}  // namespace

TEST_CASE("the steps of one ctest share its claim and run side by side", "[claim]") {
    std::string refusal;
    auto claim = take_claim({}, first_ctest, step_a, Living{{100, 101}}, refusal);
    CHECK(refusal.empty());
    claim = take_claim(claim, first_ctest, step_b, Living{{100, 101, 102}}, refusal);
    CHECK(refusal.empty());
    CHECK(claim.ctest == std::optional(first_ctest));
    CHECK(claim.steps == std::vector<ProcessIdentity>{step_a, step_b});
    // A step that ended is dropped at the next claim.
    claim = take_claim(claim, first_ctest, step_a, Living{{100, 102}}, refusal);
    CHECK(claim.steps == std::vector<ProcessIdentity>{step_b, step_a});
}

TEST_CASE("a second ctest is refused while the first runs, naming its pid", "[claim]") {
    std::string refusal;
    const auto held = take_claim({}, first_ctest, step_a, Living{{100, 101}}, refusal);
    const auto after = take_claim(held, second_ctest, step_c, Living{{100, 101, 200, 201}}, refusal);
    CHECK(refusal == "another ctest is running in this build tree (pid 100)");
    CHECK(after.ctest == std::optional(first_ctest));
    // Even when the first has no step running right now (between two steps).
    take_claim(held, second_ctest, step_c, Living{{100, 200, 201}}, refusal);
    CHECK(refusal == "another ctest is running in this build tree (pid 100)");
}

TEST_CASE("a claim whose ctest is gone is taken over, unless a step of it still runs", "[claim]") {
    std::string refusal;
    const auto held = take_claim({}, first_ctest, step_a, Living{{100, 101}}, refusal);
    // ctest was killed, its step was not.
    take_claim(held, second_ctest, step_c, Living{{101, 200, 201}}, refusal);
    CHECK_THAT(refusal, Catch::Contains("a step of an earlier ctest (pid 100, gone) is still running in this build tree (pid 101)"));
    // Both gone: taken over.
    const auto taken = take_claim(held, second_ctest, step_c, Living{{200, 201}}, refusal);
    CHECK(refusal.empty());
    CHECK(taken.ctest == std::optional(second_ctest));
    CHECK(taken.steps == std::vector<ProcessIdentity>{step_c});
}

TEST_CASE("a reused pid is not the owner: processes are known by pid and start time", "[claim]") {
    std::string refusal;
    const auto held = take_claim({}, first_ctest, step_a, Living{{100, 101}}, refusal);
    const auto alive = [](const ProcessIdentity& p) { return p == ProcessIdentity{100, 9999}; };  // pid 100, started later
    const auto taken = take_claim(held, second_ctest, step_c, alive, refusal);
    CHECK(refusal.empty());
    CHECK(taken.ctest == std::optional(second_ctest));
}

TEST_CASE("a claim is written and read back; what cannot be read is left out", "[claim]") {
    const CtestClaim claim{first_ctest, {step_a, step_b}};
    const auto back = parse_claim(claim_text(claim) + "garbage line\nstep x y\n");
    CHECK(back.ctest == claim.ctest);
    CHECK(back.steps == claim.steps);
    CHECK(!parse_claim("").ctest);
}

TEST_CASE("process_identity knows this process and its parent, and nothing of a pid that is not there", "[claim]") {
    const auto self = process_identity(static_cast<int>(::getpid()));
    REQUIRE(self);
    CHECK(self->start > 0);
    CHECK(process_identity(static_cast<int>(::getpid())) == self);  // the same start time each time
    CHECK(process_identity(static_cast<int>(::getppid())));
    CHECK(!process_identity(0));
    CHECK(!process_identity(1 << 30));
}

TEST_CASE("a command whose parent is not ctest claims nothing", "[claim]") {
    // The unit tests' parent is ctest under `ctest -R unit`, a shell by hand: either way this
    // must not throw, and by hand it must not write.
    CHECK_NOTHROW(claim_for_ctest(std::filesystem::temp_directory_path() / ("evgate-claim-" + std::to_string(::getpid()))));
    std::filesystem::remove_all(std::filesystem::temp_directory_path() / ("evgate-claim-" + std::to_string(::getpid())));
}
