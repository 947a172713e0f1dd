// One row of the ledger: a test's verdict, or a suite-level check's, with the gate's decision
// and what the reports show beside it. The verdict and the gate are the table's enums
// (verdict_table.hpp); ledger.cpp spells them as text.
#pragma once

#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "inputs/outcome.hpp"
#include "verdicts/verdict_table.hpp"

namespace evgate {

// A row's run -> outcome pairs, every attempt. Rows with the same attempts share one list (in a
// large suite most rows: passed in every run), so rows grow with the tests, not tests x runs.
// A list is copied before it is changed while another row shares it.
class Outcomes {
public:
    using List = std::vector<std::pair<std::string, Outcome>>;

    Outcomes() = default;
    Outcomes(List list) : list_(std::make_shared<List>(std::move(list))) {}
    Outcomes(std::initializer_list<List::value_type> list) : Outcomes(List(list)) {}

    List::const_iterator begin() const { return list().begin(); }
    List::const_iterator end() const { return list().end(); }
    std::size_t size() const { return list().size(); }
    bool empty() const { return list().empty(); }
    const List::value_type& operator[](std::size_t i) const { return list()[i]; }
    template <typename... Args>
    void emplace_back(Args&&... args) {
        if (!list_ || list_.use_count() > 1) list_ = std::make_shared<List>(list());
        list_->emplace_back(std::forward<Args>(args)...);
    }

private:
    const List& list() const {
        static const List none;
        return list_ ? *list_ : none;
    }
    std::shared_ptr<List> list_;
};

struct LedgerRow {
    std::string test;
    bool suite_scope = false;
    bool warning = false;                // a suite row that passes but wants a reader's attention
    Verdict verdict = Verdict::missing;  // a row nobody judged blocks
    Gate gate = Gate::block;
    std::string reason;
    Outcomes outcomes;
    std::vector<Verdict> also;
    std::vector<std::string> dirty;
    std::optional<std::string> until;
    std::optional<std::string> owner;
    std::optional<std::string> partner;        // the test an order dependence hangs on ("a + b" for a set)
    std::vector<std::string> partners;         // the minimal set it hangs on (ledger: a list when more than one)
    std::vector<std::string> cleaners;         // tests that, run between polluter and victim, make it pass
    std::optional<std::string> partner_role;   // polluter or state-setter
    std::optional<std::string> reproduce;      // one shell command, runnable from any directory
    std::vector<std::string> tests;            // a suite row: the tests it names, all of them (sandbox)
    std::size_t orders = 0;                    // distinct seed orders it ran in: what its verdict stands on
    bool fork_sensitive = false;               // its verdict rests on fresh processes: forks showed otherwise
    bool collides = false;                     // its verdict rests on runs alone: beside others it failed
    std::vector<std::string> unattributed;     // what changed while it ran that it did not change alone
    std::vector<std::string> unattributed_in;  // the runs that saw that
};

}  // namespace evgate
