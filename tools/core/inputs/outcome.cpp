#include "inputs/outcome.hpp"

#include "io/error.hpp"

namespace evgate {

std::optional<Outcome> parse_outcome(std::string_view word) {
    for (const auto o : {Outcome::passed, Outcome::failed, Outcome::error, Outcome::skipped, Outcome::xfailed, Outcome::xpassed,
                         Outcome::uncalled, Outcome::interrupted, Outcome::missing})
        if (to_string(o) == word) return o;
    return std::nullopt;
}

Outcome read_outcome(std::string_view word, const std::string& source, int line) {
    if (const auto outcome = parse_outcome(word)) return *outcome;
    throw InputError(source, line, "unknown outcome " + quote(std::string(word)));
}

OutcomeClass outcome_class(Outcome outcome) {
    switch (outcome) {
        case Outcome::passed:
        case Outcome::xfailed:
        case Outcome::xpassed: return OutcomeClass::pass;
        case Outcome::failed:
        case Outcome::error: return OutcomeClass::fail;
        case Outcome::skipped: return OutcomeClass::skip;
        case Outcome::uncalled:
        case Outcome::interrupted:
        case Outcome::missing: return OutcomeClass::none;
    }
    return OutcomeClass::none;
}

std::string_view to_string(OutcomeClass cls) {
    switch (cls) {
        case OutcomeClass::pass: return "pass";
        case OutcomeClass::fail: return "fail";
        case OutcomeClass::skip: return "skip";
        case OutcomeClass::none: return "";
    }
    return "";
}

}  // namespace evgate
