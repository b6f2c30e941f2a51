package org.vllmrouter.server;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class StartupReportTest {

    @ParameterizedTest
    @CsvSource({
        "0.0.0.0, http://127.0.0.1:8000",
        "'', http://127.0.0.1:8000",
        "::, http://[::1]:8000",
        "::1, http://[::1]:8000",
        "[::1], http://[::1]:8000",
        "fe80::1, http://[fe80::1]:8000",
        "10.1.2.3, http://10.1.2.3:8000",
        "router.local, http://router.local:8000",
    })
    void theUpstreamLinesNameAnAddressAClientOnThisMachineCanReach(String bindHost, String url) {
        assertEquals(url, StartupReport.clientUrl(bindHost, 8000));
    }
}
